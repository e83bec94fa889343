/**
 * The load generators against a real HTTP server on a real socket, in real
 * worker threads: per-second counting, the split over threads, the open model's
 * latency from the intended send time (no coordinated omission), drops beyond
 * the in-flight bound.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { LoadSession } from '../../src/load/load-session.js'
import type { SecondSample, SegmentLoad } from '../../src/result.js'

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-loadgen-'))
/** Each iteration sends one GET carrying its virtual user's id. */
const scenarioFile = path.join(dir, 'ping.mjs')
fs.writeFileSync(scenarioFile, `export default {
  name: 'ping',
  endpoints: ['GET /ping'],
  async iteration (vu) {
    const response = await vu.request('GET /ping', { method: 'GET', path: '/ping', headers: { 'x-vu': String(vu.id) } })
    return response.ok
  },
}
`)

interface TestServer {
  url: string
  vus: Set<string>
  /** The client ports each virtual user's requests came from. */
  portsByVu: Map<string, Set<number>>
  /** The client addresses each virtual user's requests came from. */
  addressesByVu: Map<string, Set<string>>
  requests: number
  /** Nothing is answered before this (epoch ms). */
  holdUntil: number
  /** Stall for 1 s once, this many ms after the first request (null: never). */
  stallAfterMs: number | null
  /** Answer every request 503 with this Retry-After, in seconds (null: 200). */
  refuseRetryAfterSeconds: number | null
  /** When each virtual user's requests came (performance.now() of this process, ms). */
  timesByVu: Map<string, number[]>
  firstRequestAt: number
  reset (): void
  close (): Promise<void>
}

/** Answers 200 at once, except while `holdUntil` (epoch ms) is in the future: then when it passes. */
async function startServer (): Promise<TestServer> {
  const state: TestServer = {
    url: '',
    vus: new Set(),
    portsByVu: new Map(),
    addressesByVu: new Map(),
    requests: 0,
    holdUntil: 0,
    stallAfterMs: null,
    refuseRetryAfterSeconds: null,
    timesByVu: new Map(),
    firstRequestAt: 0,
    reset () {
      this.vus.clear()
      this.portsByVu.clear()
      this.addressesByVu.clear()
      this.requests = 0
      this.holdUntil = 0
      this.stallAfterMs = null
      this.refuseRetryAfterSeconds = null
      this.timesByVu.clear()
      this.firstRequestAt = 0
    },
    close: async () => {},
  }
  const server = http.createServer((req, res) => {
    const now = Date.now()
    state.requests++
    const vu = String(req.headers['x-vu'])
    state.vus.add(vu)
    const ports = state.portsByVu.get(vu) ?? new Set<number>()
    state.portsByVu.set(vu, ports.add(req.socket.remotePort ?? 0))
    state.addressesByVu.set(vu, (state.addressesByVu.get(vu) ?? new Set<string>()).add(req.socket.remoteAddress ?? ''))
    state.timesByVu.set(vu, [...(state.timesByVu.get(vu) ?? []), performance.now()])
    if (state.firstRequestAt === 0) state.firstRequestAt = now
    if (state.stallAfterMs !== null && now - state.firstRequestAt >= state.stallAfterMs) {
      state.stallAfterMs = null
      state.holdUntil = now + 1000
    }
    const respond = (): void => {
      if (Date.now() < state.holdUntil) {
        setTimeout(respond, 10)
        return
      }
      if (state.refuseRetryAfterSeconds !== null) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': String(state.refuseRetryAfterSeconds) })
          .end('{"error":{"code":"SERVICE_OVERLOADED","message":"busy"}}')
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
    }
    respond()
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  state.close = async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
  return state
}

async function session (url: string, workers: number, connections: number, seconds: SecondSample[], sourceAddresses?: number): Promise<LoadSession> {
  return await LoadSession.start({
    url,
    workers,
    connections,
    ...(sourceAddresses === undefined ? {} : { sourceAddresses }),
    requestTimeoutMs: 10_000,
    scenario: { file: scenarioFile },
    data: undefined,
    runId: 'test',
    endpointOrder: ['GET /ping'],
    onSecond: (sample) => seconds.push(sample),
  })
}

describe('load generation', () => {
  let server: TestServer
  before(async () => { server = await startServer() })
  after(async () => {
    await server.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('runs a closed crowd split over two worker threads and counts every request once, second by second', async () => {
    server.reset()
    const seconds: SecondSample[] = []
    const load = await session(server.url, 2, 4, seconds)
    const segment = await load.runSegment(undefined, { model: 'closed', startVus: 4, stages: [{ durationMs: 2000, target: 4 }], thinkTimeMs: 20, honourRetryAfter: true })
    await load.close()
    assert.deepEqual([...server.vus].sort(), ['0', '1', '2', '3'], 'four virtual users, ids 0..3 across both threads')
    assert.equal(segment.all.requests, server.requests, 'the segment counted what the server saw')
    assert.equal(segment.all.ok, segment.all.requests)
    const perSecond = seconds.reduce((sum, sample) => sum + sample.all.requests, 0)
    assert.equal(perSecond, server.requests, 'the seconds add up to the whole')
    assert.equal(load.totals.all().requests, server.requests)
    assert.ok(seconds.length >= 2, `at least 2 seconds (${seconds.length})`)
    assert.deepEqual(seconds.map((s) => s.t), seconds.map((_, i) => i + 1), 'seconds come in order, none missing')
    const inside = seconds.filter((s) => s.t > segment.startT && s.t < segment.endT)
    assert.ok(inside.length >= 1 && inside.every((s) => s.vus === 4), `four VUs held inside the segment: ${JSON.stringify(seconds.map((s) => [s.t, s.vus]))}`)
    // 4 VUs with 20 ms think time: ~40 iterations each per second at most (generous bounds).
    assert.ok(segment.achieved > 20 && segment.achieved <= 4 * 2 * 50 + 4, `achieved ${segment.achieved}`)
    // Each user on a keep-alive connection of its own, as a browser's or a k6 VU's: the service
    // knows a client by its connection.
    const ports = [...server.portsByVu.values()]
    assert.deepEqual(ports.map((used) => used.size), [1, 1, 1, 1], `one connection per user: ${JSON.stringify(ports.map((used) => [...used]))}`)
    assert.equal(new Set(ports.flatMap((used) => [...used])).size, 4, 'four connections, none shared')
  })

  it('closed model: users spread over loopback source addresses, each user on one, across two threads', async () => {
    server.reset()
    const load = await session(server.url, 2, 5, [], 3)
    await load.runSegment(undefined, { model: 'closed', startVus: 5, stages: [{ durationMs: 1000, target: 5 }], thinkTimeMs: 20, honourRetryAfter: true })
    await load.close()
    const byVu = Object.fromEntries([...server.addressesByVu].map(([vu, addresses]) => [vu, [...addresses]]))
    // User k connects from the (k mod 3)-th address, whichever thread runs it.
    assert.deepEqual(byVu, { 0: ['127.1.0.1'], 1: ['127.1.0.2'], 2: ['127.1.0.3'], 3: ['127.1.0.1'], 4: ['127.1.0.2'] })
    // Without the option, the system's choice: the target's own address.
    server.reset()
    const plain = await session(server.url, 1, 2, [])
    await plain.runSegment(undefined, { model: 'closed', startVus: 2, stages: [{ durationMs: 500, target: 2 }], thinkTimeMs: 20, honourRetryAfter: true })
    await plain.close()
    assert.deepEqual(new Set([...server.addressesByVu.values()].flatMap((addresses) => [...addresses])), new Set(['127.0.0.1']))
  })

  it('closed model: a user waits out each Retry-After, to the end of a segment and across segments', async () => {
    /** 20 users refused with `retryAfterSeconds` through two segments of 1.5 s (the second starts at the next whole second); each user's requests, server-side times. */
    const refusedThroughTwoSegments = async (retryAfterSeconds: number): Promise<Map<string, number[]>> => {
      server.reset()
      server.refuseRetryAfterSeconds = retryAfterSeconds
      const load = await session(server.url, 1, 20, [])
      const spec: SegmentLoad = { model: 'closed', startVus: 20, stages: [{ durationMs: 1500, target: 20 }], thinkTimeMs: 0, honourRetryAfter: true }
      await load.runSegment(undefined, spec)
      await load.runSegment(undefined, spec)
      await load.close()
      assert.equal(server.timesByVu.size, 20)
      return new Map(server.timesByVu)
    }
    const gapsOf = (times: number[]): number[] => times.slice(1).map((at, i) => Math.round(at - (times[i] ?? 0)))
    // Retry-After 1: refused at about 0 and 1 s, then (the first segment ending in the pause) 2
    // and 3 s. Cut short at the end, a pause let a request start there, 0.5 s after the last.
    for (const [vu, times] of await refusedThroughTwoSegments(1)) {
      assert.ok(gapsOf(times).every((gapMs) => gapMs >= 999), `user ${vu} came back before its Retry-After: gaps ${JSON.stringify(gapsOf(times))} ms`)
      assert.ok(times.length >= 2 && times.length <= 4, `user ${vu}: ${times.length} requests in two segments of 1.5 s`)
    }
    // Retry-After 3: refused at 0, then at 3 s in the second segment, not when it starts at 2 s.
    for (const [vu, times] of await refusedThroughTwoSegments(3)) {
      assert.equal(times.length, 2, `user ${vu}: gaps ${JSON.stringify(gapsOf(times))} ms`)
      assert.ok(gapsOf(times).every((gapMs) => gapMs >= 2999), `user ${vu} came back before its Retry-After: gaps ${JSON.stringify(gapsOf(times))} ms`)
    }
  })

  it('open model: a stalled server shows in the latency of every arrival it delayed; a closed model hides it', async () => {
    // Open: 40 arrivals/s for 3 s; the server answers nothing for 1 s from 0.5 s after the first request.
    server.reset()
    server.stallAfterMs = 500
    let load = await session(server.url, 1, 200, [])
    const open = await load.runSegment(undefined, { model: 'open', startRate: 40, stages: [{ durationMs: 3000, target: 40 }], maxInFlight: 200 })
    await load.close()
    assert.equal(open.offered, 120)
    assert.equal(open.dropped, 0)
    // A third of the arrivals fell in the stall, waiting 0 to 1000 ms from their intended time: p90 is ~700 ms.
    assert.ok((open.all.latency.p90Ms ?? 0) >= 400, `open p90 ${open.all.latency.p90Ms} ms`)
    assert.ok((open.all.latency.maxMs ?? 0) >= 800, `open max ${open.all.latency.maxMs} ms`)

    // Closed: one virtual user in the same situation sends one request into the stall and waits.
    server.reset()
    server.stallAfterMs = 500
    load = await session(server.url, 1, 1, [])
    const closed = await load.runSegment(undefined, { model: 'closed', startVus: 1, stages: [{ durationMs: 3000, target: 1 }], thinkTimeMs: 0, honourRetryAfter: true })
    await load.close()
    assert.ok((closed.all.latency.maxMs ?? 0) >= 800, 'the one request in the stall waited')
    assert.ok((closed.all.latency.p90Ms ?? Infinity) < 100, `closed p90 ${closed.all.latency.p90Ms} ms: the stall is one sample among many`)
  })

  it('open model: arrivals beyond the in-flight bound are not sent but counted as dropped', async () => {
    server.reset()
    server.holdUntil = Date.now() + 60_000
    const load = await session(server.url, 1, 5, [])
    // The five sent stay unanswered until well after the last arrival is due.
    const resume = setTimeout(() => { server.holdUntil = 0 }, 3000)
    const segment = await load.runSegment(undefined, { model: 'open', startRate: 50, stages: [{ durationMs: 1000, target: 50 }], maxInFlight: 5 })
    clearTimeout(resume)
    await load.close()
    assert.equal(segment.offered, 50)
    assert.equal(segment.started, 5)
    assert.equal(segment.dropped, 45)
    assert.equal(segment.started + segment.dropped, segment.offered)
  })
})
