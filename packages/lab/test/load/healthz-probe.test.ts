/**
 * The /healthz probe measures the service, not the lab: it sends and times its probes in a
 * thread of its own, so a busy lab main thread (merging the generators' seconds, scraping
 * /metrics) does not show as service latency. The server runs in a child process, so that
 * blocking this thread blocks only the lab's side.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { once } from 'node:events'
import { describe, it } from 'node:test'
import { nowEpochMs, secondOf } from '../../src/time.js'
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

/**
 * The probes of the service and of the floor kept by second, summed over every second of the run
 * up to now: each probe is kept in the second it ended in, whichever that was (a thread slow to
 * start on a busy machine moves them all to later seconds, and a probe is never dropped for it).
 */
function keptBySecond (probe: HealthzProbe, runStartEpochMs: number): { service: number, floor: number } {
  const kept = { service: 0, floor: 0 }
  for (let t = 1; t <= secondOf(nowEpochMs(), runStartEpochMs); t++) {
    const second: ProbedSecond = { t, healthz: null, healthzFloor: null }
    probe.fill(second)
    kept.service += second.healthz?.count ?? 0
    kept.floor += second.healthzFloor?.count ?? 0
  }
  return kept
}

/** What a server did, in the order it did it: a request arrived on connection `connection` (its first there or not), or it answered one (slowly or not). */
type ServerEvent = { type: 'request', connection: number, first: boolean } | { type: 'answer', connection: number, slow: boolean }

/**
 * A server whose first answer on each of its first `slowConnections` connections takes `firstAnswerMs`
 * (a connect under load); every other answer is immediate. `events` lists what it did, in order.
 */
async function slowFirstAnswerServer (firstAnswerMs: number, slowConnections = Infinity): Promise<{ url: string, connections: () => number, events: ServerEvent[], close: () => void }> {
  let connections = 0
  const events: ServerEvent[] = []
  const server = http.createServer((request, response) => {
    const socket = request.socket as Socket & { answered?: boolean, index?: number }
    const first = socket.answered !== true
    socket.answered = true
    const connection = socket.index ?? -1
    events.push({ type: 'request', connection, first })
    const slow = first && connection < slowConnections
    setTimeout(() => {
      events.push({ type: 'answer', connection, slow })
      response.end('{"status":"ok"}')
    }, slow ? firstAnswerMs : 0)
  })
  server.on('connection', (socket: Socket & { index?: number }) => { socket.index = connections++ })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, connections: () => connections, events, close: () => { server.close() } }
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
      // The lab's main thread, busy from now until past the end of the run's next second: the whole of
      // that second (about 20 probes due in it) passes while this thread can neither send, receive nor
      // time anything.
      const blockedSecond = secondOf(nowEpochMs(), runStartEpochMs) + 1
      const blockedUntilEpochMs = runStartEpochMs + blockedSecond * 1000 + 100
      while (nowEpochMs() < blockedUntilEpochMs) { /* blocked */ }
      // Those due during the block and some after it.
      await probesUntil(probe, () => answered(probe) >= 30)
      await probe.stop()
      const summary = probe.summary()
      assert.ok(summary !== null && summary.count >= 30, `probes answered: ${summary?.count}`)
      assert.equal(probe.failures, 0)
      assert.equal(probe.error, undefined)
      // Probes that ended within the blocked second, timed when they ended: sent, answered and timed by a
      // thread of their own. Sent or timed on the blocked thread, none could end in it. A busy machine
      // may stall the prober's thread for part of the second, not for all of it (it may also make these
      // probes slow; the figures are in the message).
      const second: ProbedSecond = { t: blockedSecond, healthz: null, healthzFloor: null }
      probe.fill(second)
      const blocked = second.healthz
      assert.ok(blocked !== null && blocked.count >= 1, `probes that ended in second ${blockedSecond}, while this thread was blocked: ${blocked?.count ?? 0} (p50 ${blocked?.p50Ms} ms, slowest ${blocked?.maxMs} ms)`)
      assert.equal(keptBySecond(probe, runStartEpochMs).service, summary.count, 'each probe is kept by the second it ended in')
    } finally {
      server.kill()
    }
  })

  it('probes an empty server alike beside the service: the floor its figures are read against', { timeout: probeTestTimeoutMs }, async () => {
    // A service whose /healthz takes 200 ms more than the empty reference server's: more than a busy
    // machine adds to the median of either, so the two medians stand apart by most of it.
    const serviceOwnMs = 200
    const slowCode = serverCode.replace("response.end('{\"status\":\"ok\"}')", `setTimeout(() => { response.end('{"status":"ok"}') }, ${serviceOwnMs})`)
    const server = spawn(process.execPath, ['-e', slowCode], { stdio: ['ignore', 'pipe', 'inherit'] })
    const floor = await startReferenceServer()
    try {
      const [chunk] = await once(server.stdout, 'data') as [Buffer]
      const runStartEpochMs = nowEpochMs()
      const probe = new HealthzProbe({ url: `http://127.0.0.1:${chunk.toString().trim()}`, floorUrl: floor.url, ratePerSecond: 20, runStartEpochMs, timeoutMs: 5000, seed: probeSeed })
      probe.start()
      await probesUntil(probe, () => answered(probe) >= 20 && answered(probe, true) >= 20)
      await probe.stop()
      const service = probe.summary()
      const empty = probe.floorSummary()
      assert.ok(service !== null && empty !== null, 'both measured')
      assert.ok(service.count >= 15 && empty.count >= 15, `as many probes of each: ${service.count}, ${empty.count}`)
      // Probes of each at the same rate: answered, or skipped when 16 were still under way (a stalled
      // thread sends every probe due meanwhile at once; on a busy machine that can be over 16 of each).
      assert.equal(probe.failures, 0, 'service probes that got no answer')
      const [serviceDue, floorDue] = [service.count + probe.skipped, empty.count + probe.floorFailures]
      assert.ok(Math.abs(serviceDue - floorDue) <= 2, `at the same rate: ${serviceDue}, ${floorDue} (of which skipped or failed: ${probe.skipped}, ${probe.floorFailures})`)
      assert.ok((service.p50Ms ?? 0) >= serviceOwnMs, `the service's own ${serviceOwnMs} ms show: p50 ${service.p50Ms} ms`)
      // Both are probed alike from the same thread, so what the machine adds falls on both; only the
      // service's own wait tells them apart. A floor that probed the service would read it too.
      assert.ok((empty.p50Ms ?? Infinity) < (service.p50Ms ?? 0) - serviceOwnMs / 2, `and are not the floor's: p50 ${empty.p50Ms} ms against the service's ${service.p50Ms} ms`)
      const kept = keptBySecond(probe, runStartEpochMs)
      assert.equal(kept.floor, empty.count, 'the floor is kept by the second')
      assert.equal(kept.service, service.count, 'and the service beside it')
    } finally {
      server.kill()
      await floor.close()
    }
  })

  it('sends each probe at the time probeTimes gives its seed: random gaps, not a steady tick', { timeout: probeTestTimeoutMs }, async () => {
    // The server records when each probe arrives, on the same epoch clock the prober thread uses.
    const arrivals: number[] = []
    /** The two untimed requests that open the connections, then 30 probes from the start. */
    const wanted = 32
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
      // A start in the future: the thread's schedule begins there, if it has started by then.
      const runStartEpochMs = nowEpochMs() + 2500
      const seed = 0x51ced
      const probe = new HealthzProbe({ url: `http://127.0.0.1:${port}`, ratePerSecond: 10, runStartEpochMs, timeoutMs: 5000, seed })
      probe.start()
      await allReceived
      await probe.stop()
      // First, the two untimed requests that opened the connections (the next test); then the probes.
      const probes = arrivals.slice(2)
      assert.ok(probes.length >= 30, `probes received: ${probes.length}`)
      // The schedule's times from its start: the seed fixes them. It starts at the run's start, or when
      // the thread started if that was later (over three seconds, seen on a very busy machine), so its
      // start is read from the arrivals: the latest start no probe arrived before. A busy machine only
      // delays a probe (a late timer, a stalled thread: a run of a few probes each late by up to hundreds
      // of ms), never sends it early.
      const times = probeTimes(0, 10, false, seededRandom(seed))
      const fromStart = probes.map(() => times.next().value.atEpochMs)
      const startEpochMs = Math.min(...probes.map((at, i) => at - (fromStart[i] ?? NaN)))
      assert.ok(startEpochMs > runStartEpochMs - 2, `the schedule starts ${(startEpochMs - runStartEpochMs).toFixed(1)} ms from the run's start, never before it`)
      const expected = fromStart.map((at) => startEpochMs + at)
      const nextEpochMs = startEpochMs + times.next().value.atEpochMs
      assert.ok(nextEpochMs > (probes.at(-1) ?? Infinity), 'one probe for each time of the schedule up to the last one received, none skipped or added')
      // Each probe arrives a few milliseconds after its time, most of them; a few stalled ones do not move
      // the median. Any other schedule misses these times by the schedule's gaps (from a few to hundreds of
      // ms): a steady 100 ms tick, fitted to them as well as it can be, by about 600 ms at the median.
      const offsets = probes.map((at, i) => at - (expected[i] ?? NaN))
      const medianOffset = [...offsets].sort((a, b) => a - b)[Math.floor(offsets.length / 2)] ?? Infinity
      assert.ok(medianOffset < 50, `a median of ${medianOffset.toFixed(1)} ms from their times: ${offsets.map((o) => o.toFixed(1)).join(' ')}`)
      const gaps = probes.slice(1).map((at, i) => at - (probes[i] ?? at))
      assert.ok(Math.max(...gaps) > 2 * Math.min(...gaps), `the gaps between arrivals vary: ${gaps.map((g) => g.toFixed(0)).join(' ')}`)
    } finally {
      server.close()
    }
  })

  it('opens its connections before the first timed probe: no probe pays for a connection\'s first answer', { timeout: probeTestTimeoutMs }, async () => {
    // The first answer on each of the first two connections is slow; every other answer is immediate.
    const server = await slowFirstAnswerServer(300, 2)
    try {
      // The run starts a second from now (a lab run starts half a second after it is set up): time for the warm-up.
      const probe = new HealthzProbe({ url: server.url, ratePerSecond: 20, runStartEpochMs: nowEpochMs() + 1000, timeoutMs: 5000, seed: probeSeed })
      probe.start()
      // The warm-up, then probes from the start.
      await probesUntil(probe, () => answered(probe) >= 20)
      await probe.stop()
      const summary = probe.summary()
      assert.ok(summary !== null && summary.count >= 20, `probes answered: ${summary?.count}`)
      assert.equal(probe.failures, 0)
      // Told by what the server did, in order, not by the probes' times (which a busy machine can
      // stretch past any bound): the two untimed requests opened the two connections and got their slow
      // first answers before anything else arrived. So no timed probe was under way while a first answer
      // was pending, and none paid for one. Without the warm-up, the first probe would open the first
      // connection and wait for its slow answer, with the next ones arriving meanwhile.
      const shown = server.events.slice(0, 8).map((event) => event.type === 'request' ? `request ${event.connection}${event.first ? ' (first)' : ''}` : `answer ${event.connection}${event.slow ? ' (slow)' : ''}`).join(', ')
      const [first, second, third, fourth] = server.events
      assert.ok(first?.type === 'request' && first.first && second?.type === 'request' && second.first && first.connection !== second.connection, `two connections opened first: ${shown}`)
      assert.ok(third?.type === 'answer' && third.slow && fourth?.type === 'answer' && fourth.slow, `and their slow first answers given before any other request arrived: ${shown}`)
      assert.equal(server.events.filter((event) => event.type === 'answer' && event.slow).length, 2, 'no other slow answer')
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
