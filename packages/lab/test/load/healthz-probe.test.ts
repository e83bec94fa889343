/**
 * The /healthz probe measures the service, not the lab: it sends and times its probes in a
 * thread of its own, so a busy lab main thread (merging the generators' seconds, scraping
 * /metrics) does not show as service latency. The server runs in a child process, so that
 * blocking this thread blocks only the lab's side.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { once } from 'node:events'
import { describe, it } from 'node:test'
import { nowEpochMs } from '../../src/time.js'
import { HealthzProbe, probeTimes, seededRandom } from '../../src/load/probe.js'
import type { SecondSample } from '../../src/result.js'
import { startReferenceServer } from '../../src/load/reference-server.js'

/** A second of the run, as far as the probe fills it. */
type ProbedSecond = Pick<SecondSample, 't' | 'healthz' | 'healthzFloor'>

const serverCode = `
const server = require('node:http').createServer((request, response) => { response.end('{"status":"ok"}') })
server.listen(0, '127.0.0.1', () => { console.log(server.address().port) })
`

/** Probes at the same random times on every run (its schedule below: no long gap early on), so the counts asserted do not hang on chance. */
const probeSeed = 7

/** Long enough for any probe count waited on below, short of a hung test. */
const probeTestTimeoutMs = 30_000

/** Waits, on the probe's own events, until `done` holds: the probes' schedule runs meanwhile. */
async function probesUntil (probe: HealthzProbe, done: () => boolean): Promise<void> {
  while (!done()) await once(probe, 'probe')
}

/** Probes of the service (or of the floor) answered so far. */
const answered = (probe: HealthzProbe, floor = false): number => (floor ? probe.floorSummary() : probe.summary())?.count ?? 0

/** A server whose first answer on each connection takes `firstAnswerMs` (a connect under load); later answers on it are immediate. */
async function slowFirstAnswerServer (firstAnswerMs: number): Promise<{ url: string, connections: () => number, close: () => void }> {
  let connections = 0
  const server = http.createServer((request, response) => {
    const socket = request.socket as typeof request.socket & { answered?: boolean }
    const first = socket.answered !== true
    socket.answered = true
    setTimeout(() => { response.end('{"status":"ok"}') }, first ? firstAnswerMs : 0)
  })
  server.on('connection', () => { connections++ })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, connections: () => connections, close: () => { server.close() } }
}

describe('the /healthz probe', () => {
  it('times its probes in its own thread: a blocked lab main thread does not delay them', { timeout: probeTestTimeoutMs }, async () => {
    const server = spawn(process.execPath, ['-e', serverCode], { stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      const [chunk] = await once(server.stdout, 'data') as [Buffer]
      const url = `http://127.0.0.1:${chunk.toString().trim()}`
      const runStartEpochMs = nowEpochMs()
      const probe = new HealthzProbe({ url, ratePerSecond: 20, runStartEpochMs, timeoutMs: 5000, seed: probeSeed })
      probe.start()
      // Probes go out at 20/s before, during and after the block.
      await probesUntil(probe, () => answered(probe) >= 5)
      const blockedUntil = performance.now() + 400
      while (performance.now() < blockedUntil) { /* the lab's main thread, busy for 400 ms */ }
      // Those due during the block (about 8) and some after it.
      await probesUntil(probe, () => answered(probe) >= 15)
      await probe.stop()
      const summary = probe.summary()
      assert.ok(summary !== null && summary.count >= 10, `probes answered: ${summary?.count}`)
      assert.equal(probe.failures, 0)
      assert.equal(probe.error, undefined)
      // Timed on the blocked thread, the probes due during the block would read 200 to 400 ms.
      assert.ok((summary.maxMs ?? Infinity) < 200, `slowest probe ${summary.maxMs} ms`)
      const second: ProbedSecond = { t: 1, healthz: null, healthzFloor: null }
      probe.fill(second)
      assert.ok(second.healthz !== null, 'probes are kept by the second they ended in')
    } finally {
      server.kill()
    }
  })

  it('probes an empty server alike beside the service: the floor its figures are read against', { timeout: probeTestTimeoutMs }, async () => {
    // A service whose /healthz takes 40 ms more than the empty reference server's.
    const slowCode = serverCode.replace("response.end('{\"status\":\"ok\"}')", "setTimeout(() => { response.end('{\"status\":\"ok\"}') }, 40)")
    const server = spawn(process.execPath, ['-e', slowCode], { stdio: ['ignore', 'pipe', 'inherit'] })
    const floor = await startReferenceServer()
    try {
      const [chunk] = await once(server.stdout, 'data') as [Buffer]
      const probe = new HealthzProbe({ url: `http://127.0.0.1:${chunk.toString().trim()}`, floorUrl: floor.url, ratePerSecond: 20, runStartEpochMs: nowEpochMs(), timeoutMs: 5000, seed: probeSeed })
      probe.start()
      await probesUntil(probe, () => answered(probe) >= 20 && answered(probe, true) >= 20)
      await probe.stop()
      const service = probe.summary()
      const empty = probe.floorSummary()
      assert.ok(service !== null && empty !== null, 'both measured')
      assert.ok(service.count >= 15 && empty.count >= 15, `as many probes of each: ${service.count}, ${empty.count}`)
      assert.ok(Math.abs(service.count - empty.count) <= 2, `at the same rate: ${service.count}, ${empty.count}`)
      assert.ok((service.p50Ms ?? 0) >= 40, `the service's own 40 ms show: p50 ${service.p50Ms} ms`)
      assert.ok((empty.p50Ms ?? Infinity) < 40, `and are not the floor's: p50 ${empty.p50Ms} ms`)
      assert.equal(probe.floorFailures, 0)
      assert.equal(probe.failures, 0)
      const [first, second]: [ProbedSecond, ProbedSecond] = [{ t: 0, healthz: null, healthzFloor: null }, { t: 1, healthz: null, healthzFloor: null }]
      probe.fill(first)
      probe.fill(second)
      assert.ok(first.healthzFloor !== null || second.healthzFloor !== null, 'the floor is kept by the second')
    } finally {
      server.kill()
      await floor.close()
    }
  })

  it('sends each probe at the time probeTimes gives its seed: random gaps, not a steady tick', { timeout: probeTestTimeoutMs }, async () => {
    // The server records when each probe arrives, on the same epoch clock the prober thread uses.
    const arrivals: number[] = []
    /** The two untimed requests that open the connections, then 20 probes from the start. */
    const wanted = 22
    let received: () => void = () => {}
    const allReceived = new Promise<void>((resolve) => { received = resolve })
    const server = http.createServer((request, response) => {
      arrivals.push(nowEpochMs())
      response.end('{"status":"ok"}')
      if (arrivals.length === wanted) received()
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const { port } = server.address() as AddressInfo
      // A start in the future, so the thread's schedule begins exactly there, however long it took to start.
      const runStartEpochMs = nowEpochMs() + 2500
      const seed = 0x51ced
      const probe = new HealthzProbe({ url: `http://127.0.0.1:${port}`, ratePerSecond: 10, runStartEpochMs, timeoutMs: 5000, seed })
      probe.start()
      await allReceived
      await probe.stop()
      // First, before the start: the two untimed requests that opened the connections (the next test).
      const warmUps = arrivals.splice(0, 2)
      assert.ok(warmUps.length === 2 && warmUps.every((at) => at < runStartEpochMs), `two requests before the schedule: ${warmUps.map((at) => (at - runStartEpochMs).toFixed(0)).join(' ')} ms from its start`)
      const times = probeTimes(runStartEpochMs, 10, false, seededRandom(seed))
      const expected: number[] = []
      for (let at = times.next().value.atEpochMs; at <= (arrivals.at(-1) ?? 0); at = times.next().value.atEpochMs) expected.push(at)
      assert.ok(arrivals.length >= 15, `probes received: ${arrivals.length}`)
      assert.equal(arrivals.length, expected.length, 'one probe for each time of the schedule, none skipped or added')
      // Each probe leaves at its time and arrives a few milliseconds later; a late timer under a busy CI
      // delays one, never sends it early. The bound is loose; a steady 100 ms tick misses these times by
      // tens of milliseconds at most probes (the schedule's gaps range from a few to hundreds of ms).
      const offsets = arrivals.map((at, i) => at - (expected[i] ?? NaN))
      assert.ok(offsets.every((offset) => offset > -2), `never before its time: ${offsets.map((o) => o.toFixed(1)).join(' ')}`)
      const onTime = offsets.filter((offset) => offset < 25).length
      assert.ok(onTime >= arrivals.length * 0.8, `${onTime} of ${arrivals.length} within 25 ms of their time: ${offsets.map((o) => o.toFixed(1)).join(' ')}`)
      const gaps = arrivals.slice(1).map((at, i) => at - (arrivals[i] ?? at))
      assert.ok(Math.max(...gaps) > 2 * Math.min(...gaps), `the gaps between arrivals vary: ${gaps.map((g) => g.toFixed(0)).join(' ')}`)
    } finally {
      server.close()
    }
  })

  it('opens its connections before the first timed probe: no probe pays for a connection\'s first answer', { timeout: probeTestTimeoutMs }, async () => {
    const server = await slowFirstAnswerServer(300)
    try {
      // The run starts a second from now (a lab run starts half a second after it is set up): time for the warm-up.
      const probe = new HealthzProbe({ url: server.url, ratePerSecond: 20, runStartEpochMs: nowEpochMs() + 1000, timeoutMs: 5000, seed: probeSeed })
      probe.start()
      // The 300 ms warm-up, then probes from the start.
      await probesUntil(probe, () => answered(probe) >= 20)
      await probe.stop()
      const summary = probe.summary()
      assert.ok(summary !== null && summary.count >= 10, `probes answered: ${summary?.count}`)
      const connections = server.connections()
      assert.ok(connections >= 2, `connections opened before the probes: ${connections}`)
      // Only a connection beyond the two opened first (three probes in flight at once, on a busy
      // machine) would make a probe wait for its first answer.
      if (connections === 2) assert.ok((summary.maxMs ?? Infinity) < 250, `slowest probe ${summary.maxMs} ms: none waited for a connection's first answer`)
      else assert.ok((summary.p90Ms ?? Infinity) < 250, `${connections} connections; p90 ${summary.p90Ms} ms`)
    } finally {
      server.close()
    }
  })

  it('does not hide a slow start: probes due during the warm-up go after it, timed from when they were due', { timeout: probeTestTimeoutMs }, async () => {
    const server = await slowFirstAnswerServer(600)
    try {
      // The run starts now: its first probes fall due while the warm-up waits 600 ms for its answers.
      const probe = new HealthzProbe({ url: server.url, ratePerSecond: 20, runStartEpochMs: nowEpochMs(), timeoutMs: 5000, seed: probeSeed })
      probe.start()
      await probesUntil(probe, () => answered(probe) + probe.skipped >= 20)
      await probe.stop()
      const summary = probe.summary()
      // Some of the probes due at once may find 16 in flight (each new connection's first answer takes 600 ms) and be skipped.
      assert.ok(summary !== null && summary.count + probe.skipped >= 20, `probes answered: ${summary?.count}, skipped: ${probe.skipped}`)
      // Timed from the run's start, not from the warm-up's end: those probes read up to the 600 ms they waited.
      assert.ok((summary.maxMs ?? 0) >= 300, `slowest probe ${summary.maxMs} ms`)
    } finally {
      server.close()
    }
  })

  it('the empty reference server answers like /healthz and is gone once closed', async () => {
    const floor = await startReferenceServer()
    const response = await fetch(`${floor.url}/healthz`)
    assert.equal(response.status, 200)
    assert.deepEqual(await response.json(), { status: 'ok' })
    await floor.close()
    await assert.rejects(fetch(`${floor.url}/healthz`), 'nothing listens after close')
  })

  it('sends nothing at rate 0', async () => {
    const probe = new HealthzProbe({ url: 'http://127.0.0.1:9', ratePerSecond: 0, runStartEpochMs: nowEpochMs(), timeoutMs: 1000 })
    probe.start()
    await probe.stop()
    assert.equal(probe.summary(), null)
    assert.equal(probe.floorSummary(), null)
  })

  it('sends its probes at random times, phase-locked to nothing periodic such as the lab\'s once-a-second scrape', () => {
    // Seeded, so the figures below are the same on every run.
    const random = seededRandom(0x2f6b9a1)
    const start = 1_700_000_000_000
    const times = probeTimes(start, 10, true, random)
    const service: number[] = []
    let previous = start
    let floorsInBetween = 0
    let pendingFloor: number | undefined
    while (service.length < 20_000) {
      const { atEpochMs, floor } = times.next().value
      assert.ok(atEpochMs >= previous, 'in time order')
      previous = atEpochMs
      if (floor) {
        pendingFloor = atEpochMs
        continue
      }
      const last = service.at(-1)
      if (pendingFloor !== undefined && last !== undefined && pendingFloor > last && pendingFloor < atEpochMs && Math.abs(pendingFloor - (last + atEpochMs) / 2) < 0.01) floorsInBetween++
      pendingFloor = undefined
      service.push(atEpochMs)
    }
    const meanGapMs = ((service.at(-1) ?? start) - start) / service.length
    assert.ok(Math.abs(meanGapMs - 100) < 5, `10 a second on average: a mean gap of ${meanGapMs.toFixed(1)} ms`)
    assert.equal(floorsInBetween, service.length - 1, 'a floor probe midway between each two service probes')
    // A scrape starts at each second of the run and holds the service for a few milliseconds. A
    // steady tick every 100 ms from the start lands on it one probe in ten; random times about as
    // often as the scrape takes of the time (5 ms in 1,000: 0.5 %).
    const atScrape = service.filter((at) => (at - start) % 1000 < 5).length / service.length
    assert.ok(atScrape < 0.01, `${(atScrape * 100).toFixed(2)} % of probes in the first 5 ms of a second`)
    const byTenth = Array.from({ length: 10 }, (_, tenth) => service.filter((at) => Math.floor(((at - start) % 1000) / 100) === tenth).length / service.length)
    assert.ok(byTenth.every((share) => share > 0.09 && share < 0.11), `spread evenly over the second: ${byTenth.map((share) => share.toFixed(3)).join(', ')}`)
  })
})
