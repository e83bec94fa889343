/**
 * Paced refusals on their own (mock timers, no sockets), then through a real service: a
 * client that retries a 503 at once is held until its Retry-After, so it cannot turn
 * refusals into a storm.
 */
import assert from 'node:assert/strict'
import type http from 'node:http'
import { afterEach, beforeEach, describe, it, mock, type TestContext } from 'node:test'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Agent } from 'undici'
import { createError, isTollboothError, type TollboothError } from '../../src/errors.js'
import { connectionKeys } from '../../src/overload/hash-admission.js'
import { RefusalPacer } from '../../src/overload/pacing.js'
import { slowBcryptHash } from '../helpers/policies.js'
import { parseResponses, rawConnection } from '../helpers/net/raw-http.js'
import { movableClock, registerUser, request, seedPolicy, startTestService, type TestService } from '../helpers/service.js'
import type { FlatConfig } from '../../src/config/index.js'
import { waitFor } from '../helpers/wait.js'

const overloaded = (): TollboothError => createError('SERVICE_OVERLOADED', undefined, { retryAfterSeconds: 2 })
/** What admission answers with a refusal: counted elsewhere, thrown here. */
const refuse = (refusal: TollboothError): never => { throw refusal }

/** Runs `admit` and says how it ended: 'admitted' or the refusal's code, and when (mocked ms). */
async function outcome (pacer: RefusalPacer, promise: Promise<unknown>): Promise<{ result: string, heldNow: number }> {
  const heldNow = pacer.held
  try {
    await promise
    return { result: 'admitted', heldNow }
  } catch (err) {
    assert.ok(isTollboothError(err))
    return { result: err.code, heldNow }
  }
}

describe('refusal pacer (mock timers)', () => {
  beforeEach(() => { mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 }) })
  afterEach(() => { mock.timers.reset() })

  const pacerAt = (): RefusalPacer => new RefusalPacer({ now: () => Date.now(), maxHoldMs: 10_000, maxHeld: 2, releaseSpread: 0 })

  it('answers a first refusal at once and remembers when the client may come back', async () => {
    const pacer = pacerAt()
    const client = { connection: {}, keys: ['ip:a'] }
    const first = await outcome(pacer, pacer.admit(client, overloaded, refuse))
    assert.equal(first.result, 'SERVICE_OVERLOADED')
    assert.equal(pacer.held, 0)
    assert.equal(pacer.holdMs(client), 2000)
    assert.equal(pacer.holdMs({ keys: ['ip:a'] }), 2000, 'the address alone is known too')
    assert.equal(pacer.holdMs({ connection: {}, keys: ['ip:b'] }), 0, 'another client is not paced')
  })

  it('paces by a shared address only a connection it has not seen, or a request with no connection of its own (a NAT, a proxy)', async () => {
    const pacer = pacerAt()
    const neighbour = { connection: {}, keys: ['ip:office'] }
    // A neighbour behind the same address, whose connection has had a request admitted before.
    assert.equal((await outcome(pacer, pacer.admit(neighbour, () => 'ticket', refuse))).result, 'admitted')
    const refused = { connection: {}, keys: ['ip:office'] }
    assert.equal((await outcome(pacer, pacer.admit(refused, overloaded, refuse))).result, 'SERVICE_OVERLOADED')
    assert.equal(pacer.holdMs(refused), 2000, 'the refused client is paced by its own connection')
    assert.equal(pacer.holdMs(neighbour), 0, 'a neighbour on a connection of its own is not held by that refusal')
    assert.equal(pacer.holdMs({ connection: {}, keys: ['ip:office'] }), 200, 'a new connection from that address is, a moment (a client that reconnects each time, or a neighbour\'s first request)')
    assert.equal(pacer.holdMs({ keys: ['ip:office'] }), 2000, 'a request with no connection of its own (through a proxy): its whole Retry-After')
    assert.equal(pacer.holdMs({ connection: neighbour.connection, keys: ['account:x', 'ip:office'] }), 0)
    // The neighbour, straight back to be refused, is refused at once, not held; then it is paced by its own refusal.
    const back = await outcome(pacer, pacer.admit(neighbour, overloaded, refuse))
    assert.deepEqual(back, { result: 'SERVICE_OVERLOADED', heldNow: 0 })
    assert.equal(pacer.heldTotal, 0)
    assert.equal(pacer.holdMs(neighbour), 2000)
  })

  it('reads a connection as young by its age, not by what the pacer saw, and paces by a shared account as by an address', () => {
    const pacer = pacerAt()
    // Another user of the account (a family's, a load test's) was refused.
    pacer.noteRefusal({ connection: {}, keys: ['account:family'] }, 2)
    // A user whose connection served reads for seconds (never through the pacer): not held by it.
    assert.equal(pacer.holdMs({ connection: {}, connectionAgeMs: 5000, keys: ['account:family', 'ip:home'] }), 0)
    // A connection's first request, a moment; a later one on a young connection, what is left of
    // the moment (a reconnecting client that sends something else first); through a proxy, in full.
    assert.equal(pacer.holdMs({ connection: {}, connectionAgeMs: 0, keys: ['account:family'] }), 200)
    assert.equal(pacer.holdMs({ connection: {}, connectionAgeMs: 150, keys: ['account:family'] }), 50)
    assert.equal(pacer.holdMs({ keys: ['account:family'] }), 2000)
  })

  it('teaches the shared keys only by the refusals of young connections and of requests with none of their own', async () => {
    const pacer = pacerAt()
    // A user refused on its keep-alive connection of some seconds: paced by it, not by its address.
    const user = { connection: {}, connectionAgeMs: 5000, keys: ['ip:nat', 'account:family'] }
    assert.equal((await outcome(pacer, pacer.admit(user, overloaded, refuse))).result, 'SERVICE_OVERLOADED')
    pacer.noteRefusal(user, 2)
    assert.equal(pacer.holdMs(user), 2000, 'its own connection is paced')
    assert.equal(pacer.holdMs({ connection: {}, connectionAgeMs: 0, keys: ['ip:nat', 'account:family'] }), 0, 'a stranger\'s new connection is not')
    // A client refused on a new connection (one that reconnects to retry): its address learns it.
    const reconnecting = { connection: {}, connectionAgeMs: 0, keys: ['ip:nat'] }
    assert.equal((await outcome(pacer, pacer.admit(reconnecting, overloaded, refuse))).result, 'SERVICE_OVERLOADED')
    assert.equal(pacer.holdMs({ connection: {}, connectionAgeMs: 0, keys: ['ip:nat'] }), 200)
    // Through a proxy: its address learns it.
    pacer.noteRefusal({ keys: ['ip:proxied'] }, 2)
    assert.equal(pacer.holdMs({ keys: ['ip:proxied'] }), 2000)
  })

  it('notes a refusal by the age its connection had when the request arrived: a first request refused after a long wait is still a new client\'s', () => {
    const pacer = pacerAt()
    // A login that was its connection's first request, admitted, then expired in the queue 1.9 s later.
    pacer.noteRefusal({ connection: {}, connectionAgeMs: 1900, arrivalAgeMs: 0, keys: ['ip:reconnects'] }, 2)
    assert.equal(pacer.holdMs({ connection: {}, connectionAgeMs: 0, keys: ['ip:reconnects'] }), 200, 'its address learnt it')
    // The same wait on a connection of some seconds already: its address learns nothing.
    pacer.noteRefusal({ connection: {}, connectionAgeMs: 5900, arrivalAgeMs: 4000, keys: ['ip:keeps'] }, 2)
    assert.equal(pacer.holdMs({ connection: {}, connectionAgeMs: 0, keys: ['ip:keeps'] }), 0)
  })

  it('holds a client that is back early until its Retry-After, then checks again: admitted if there is room', async () => {
    const pacer = pacerAt()
    const client = { connection: {}, keys: ['ip:a'] }
    await outcome(pacer, pacer.admit(client, overloaded, refuse))
    mock.timers.tick(500)
    let room = false
    let settled = false
    const early = pacer.admit(client, () => room ? 'ticket' : overloaded(), refuse)
    void early.then(() => { settled = true }, () => { settled = true })
    await Promise.resolve()
    assert.equal(pacer.held, 1)
    mock.timers.tick(1499)
    await Promise.resolve()
    assert.equal(settled, false, 'still held 1 ms before its time')
    room = true
    mock.timers.tick(1)
    assert.equal((await outcome(pacer, early)).result, 'admitted')
    assert.equal(pacer.held, 0)
    assert.equal(pacer.heldTotal, 1)
  })

  it('refuses again after the hold, with the time noted anew: a naive client makes one request per Retry-After', async () => {
    const pacer = pacerAt()
    const client = { connection: {}, keys: [] }
    let requests = 0
    const admitOnce = async (): Promise<string> => {
      requests++
      return (await outcome(pacer, pacer.admit(client, overloaded, refuse))).result
    }
    // A client that retries the instant it is answered, for 10 mocked seconds.
    const loop = (async () => { while (Date.now() < 10_000) await admitOnce() })()
    for (let ms = 0; ms < 10_000; ms += 100) {
      mock.timers.tick(100)
      // setImmediate is not mocked: a real turn of the loop lets the client's retry arrive.
      await new Promise((resolve) => setImmediate(resolve))
    }
    mock.timers.tick(2000)
    await loop
    // At once, then every 2 s: 0, 2, 4, 6, 8, 10.
    assert.ok(requests >= 5 && requests <= 7, `${requests} requests in 10 s`)
  })

  it('does not hold a polite client that waited out its Retry-After', async () => {
    const pacer = pacerAt()
    const client = { connection: {}, keys: ['ip:a'] }
    await outcome(pacer, pacer.admit(client, overloaded, refuse))
    mock.timers.tick(2000)
    const back = await outcome(pacer, pacer.admit(client, overloaded, refuse))
    assert.deepEqual(back, { result: 'SERVICE_OVERLOADED', heldNow: 0 })
  })

  it('does not hold, nor count as held, what is left of a connection\'s youth under a millisecond', async () => {
    const pacer = pacerAt()
    pacer.noteRefusal({ keys: ['ip:a'] }, 2)
    const late = { connection: {}, connectionAgeMs: 199.5, keys: ['ip:a'] }
    assert.equal(pacer.holdMs(late), 0.5)
    assert.deepEqual(await outcome(pacer, pacer.admit(late, overloaded, refuse)), { result: 'SERVICE_OVERLOADED', heldNow: 0 })
    assert.equal(pacer.heldTotal, 0)
  })

  it('holds no longer than the caller allows', async () => {
    const pacer = pacerAt()
    const client = { keys: ['ip:a'] }
    pacer.noteRefusal(client, 5)
    let settled = false
    const held = pacer.admit(client, overloaded, refuse, { maxHoldMs: 1000 })
    void held.catch(() => {}).finally(() => { settled = true })
    mock.timers.tick(999)
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(settled, false)
    mock.timers.tick(1)
    assert.equal((await outcome(pacer, held)).result, 'SERVICE_OVERLOADED')
  })

  it('spreads the release of a crowd refused at once over a quarter of its hold, so it does not come back in one burst', async () => {
    const draws = Array.from({ length: 100 }, (_, i) => i / 100)
    const pacer = new RefusalPacer({ now: () => Date.now(), random: () => draws.shift() ?? 0 })
    const clients = draws.map((_, i) => ({ keys: [`ip:${i}`] }))
    for (const client of clients) pacer.noteRefusal(client, 2)
    const releasedAt: number[] = []
    const held = clients.map(async (client) => {
      await pacer.admit(client, overloaded, refuse).catch(() => {})
      releasedAt.push(Date.now())
    })
    for (let ms = 0; ms <= 2500; ms += 50) {
      mock.timers.tick(50)
      await new Promise((resolve) => setImmediate(resolve))
    }
    await Promise.all(held)
    assert.equal(releasedAt.length, 100)
    assert.ok(Math.min(...releasedAt) >= 2000, 'none before its Retry-After')
    assert.ok(Math.max(...releasedAt) <= 2500, 'none later than a quarter past it')
    const perWindow = new Map<number, number>()
    for (const t of releasedAt) perWindow.set(Math.floor(t / 50), (perWindow.get(Math.floor(t / 50)) ?? 0) + 1)
    assert.ok(Math.max(...perWindow.values()) <= 15, `at most 15 in any 50 ms (${JSON.stringify([...perWindow])})`)
  })

  it('never holds an admitted request, early or not', async () => {
    const pacer = pacerAt()
    const client = { connection: {}, keys: ['ip:a'] }
    pacer.noteRefusal(client, 5)
    assert.equal((await outcome(pacer, pacer.admit(client, () => 'ticket', refuse))).result, 'admitted')
    assert.equal(pacer.heldTotal, 0)
  })

  it('holds at most maxHeld requests at once; past it, refusals are answered at once', async () => {
    const pacer = pacerAt()
    const clients = [0, 1, 2].map((i) => ({ keys: [`ip:${i}`] }))
    for (const client of clients) pacer.noteRefusal(client, 2)
    const held = clients.map((client) => pacer.admit(client, overloaded, refuse))
    held.forEach((promise) => { promise.catch(() => {}) })
    await Promise.resolve()
    assert.equal(pacer.held, 2)
    assert.equal((await outcome(pacer, held[2] as Promise<unknown>)).result, 'SERVICE_OVERLOADED', 'the third is answered at once')
    mock.timers.tick(2000)
    await Promise.allSettled(held)
    assert.equal(pacer.held, 0)
  })

  it('stops holding when the client hangs up', async () => {
    const pacer = pacerAt()
    const client = { keys: ['ip:a'] }
    pacer.noteRefusal(client, 5)
    const controller = new AbortController()
    const held = pacer.admit(client, overloaded, refuse, { holdSignal: () => controller.signal })
    await Promise.resolve()
    assert.equal(pacer.held, 1)
    controller.abort()
    assert.equal((await outcome(pacer, held)).result, 'SERVICE_OVERLOADED')
    assert.equal(pacer.held, 0)
  })

  it('forgets expired addresses, then the oldest, past maxKeys', () => {
    const pacer = new RefusalPacer({ now: () => Date.now(), maxKeys: 3 })
    pacer.noteRefusal({ keys: ['ip:old'] }, 1)
    mock.timers.tick(1000)
    for (const key of ['ip:a', 'ip:b', 'ip:c']) pacer.noteRefusal({ keys: [key] }, 10)
    assert.equal(pacer.rememberedKeys, 3, 'the expired one went first')
    pacer.noteRefusal({ keys: ['ip:d'] }, 10)
    assert.equal(pacer.rememberedKeys, 3)
    assert.equal(pacer.holdMs({ keys: ['ip:a'] }), 0, 'then the oldest update')
    assert.equal(pacer.holdMs({ keys: ['ip:d'] }), 10_000)
  })
})

/**
 * A service that refuses every login (its one hash thread and its one place in the queue taken by
 * slow verifies), a registered account, and `login(through, headers)` timing one login. `finish`
 * closes the service and checks the blockers were still there.
 */
async function refusingService (t: TestContext, config: Partial<FlatConfig> = {}): Promise<{
  service: TestService
  login: (dispatcher: Agent, headers?: Record<string, string>) => Promise<{ status: number, retryAfter: number, ms: number }>
  finish: () => Promise<void>
  /** The service's pacing clock: moved on instead of sleeping. */
  clock: ReturnType<typeof movableClock>
}> {
  const clock = movableClock()
  const service = await startTestService({ policy: seedPolicy, threads: 1, maxQueue: 1, config: { maxEventLoopDelayMs: 0, ...config }, clock: clock.now })
  t.after(async () => { await service.close() })
  const account = await registerUser(service)
  const stored = slowBcryptHash(16)
  const running = blockerRun(service.engine.verify('blocker', stored))
  const queued = service.engine.verify('blocker', stored).catch(() => {})
  const login = async (dispatcher: Agent, headers: Record<string, string> = {}): Promise<{ status: number, retryAfter: number, ms: number }> => {
    const sent = performance.now()
    const response = await request(service, 'POST', '/api/v1/auth/login', { body: { email: account.email, password: account.password }, headers, dispatcher })
    return { status: response.status, retryAfter: Number(response.headers.get('retry-after')), ms: performance.now() - sent }
  }
  const finish = async (): Promise<void> => {
    await service.close()
    await queued
    await blockerEnded(running)
  }
  return { service, login, finish, clock }
}

/**
 * How the running blocker ended, read as it settles (its rejection handled at once): its match,
 * or the message it failed with.
 */
async function blockerRun (verify: Promise<{ match: boolean }>): Promise<boolean | string> {
  return await verify.then((result) => result.match, (err: unknown) => (err instanceof Error ? err.message : String(err)))
}

/**
 * The running blocker ends when the pool closes: finished (no match), or, on a machine so loaded
 * that its cost-16 bcrypt outlasts Piscina's close timeout, its worker terminated.
 */
async function blockerEnded (running: Promise<boolean | string>): Promise<void> {
  const ended = await running
  if (ended === false) return
  assert.match(String(ended), /Terminating worker thread/, 'the blocker finished without a match or was ended by the close')
}

/**
 * A keep-alive connection from `address` that has served a read (never through the pacer, which
 * sees only hashed routes) and is past its youth (200 ms from its first request, on the service's clock).
 */
async function agedConnection (t: TestContext, service: TestService, address: string, clock: ReturnType<typeof movableClock>): Promise<Agent> {
  const agent = new Agent({ localAddress: address, connections: 1 })
  t.after(async () => { await agent.close() })
  assert.equal((await request(service, 'GET', '/api/v1/posts', { dispatcher: agent })).status, 200)
  clock.advance(300)
  return agent
}

describe('paced refusals through the service (real sockets, one busy hash thread)', () => {
  it('holds a client that retries a 503 at once, one that reconnects to retry a moment, and answers a new client at once', async (t) => {
    // One thread and room for one waiting request, both taken for the whole test: every login is
    // refused. The running blocker is bcrypt cost 16, 64 cost-10 verifies (seconds on any machine),
    // so the thread is still busy when the early retry's hold ends (at most 1.25 s); a cost-14 one
    // once finished first on a faster machine, and the retry was admitted. The queued blocker is
    // refused when the service closes.
    // Shedding on event-loop delay is off: on a loaded machine it would answer the early retry
    // before pacing sees it (shedding.test.ts checks shedding; this checks pacing alone).
    const service = await startTestService({ policy: seedPolicy, threads: 1, maxQueue: 1, config: { maxEventLoopDelayMs: 0 } })
    t.after(async () => { await service.close() })
    const account = await registerUser(service)
    const stored = slowBcryptHash(16)
    const running = blockerRun(service.engine.verify('blocker', stored))
    const queued = service.engine.verify('blocker', stored).then(() => 'verified', (err: unknown) => (isTollboothError(err) ? err.code : String(err)))
    assert.deepEqual([service.engine.stats().running, service.engine.stats().queued], [1, 1])

    // A keep-alive client: one connection, kept; a client that reconnects: a new one each time.
    const keepAlive = new Agent({ localAddress: '127.0.0.21', connections: 1 })
    t.after(async () => { await keepAlive.close() })
    const login = async (from: string, dispatcher?: Agent): Promise<{ status: number, code: string, retryAfter: number, ms: number }> => {
      const fresh = dispatcher === undefined ? new Agent({ localAddress: from }) : undefined
      const sent = performance.now()
      const response = await request(service, 'POST', '/api/v1/auth/login', { body: { email: account.email, password: account.password }, dispatcher: dispatcher ?? fresh })
      await fresh?.close()
      return { status: response.status, code: String(response.body?.error?.code), retryAfter: Number(response.headers.get('retry-after')), ms: performance.now() - sent }
    }
    const first = await login('127.0.0.21', keepAlive)
    assert.equal(first.status, 503)
    assert.ok(first.retryAfter >= 1)
    assert.ok(first.ms < 500, `the first refusal is answered at once (${first.ms.toFixed(0)} ms)`)
    // The same client, straight back on its connection: held until its Retry-After.
    const early = await login('127.0.0.21', keepAlive)
    assert.equal(early.status, 503)
    // Held until its Retry-After, but never more than half the 2 s login deadline.
    const expectedHoldMs = Math.min(first.retryAfter * 1000, service.config.loginDeadlineMs / 2)
    assert.ok(early.ms >= expectedHoldMs - 100, `held ${early.ms.toFixed(0)} ms for a Retry-After of ${first.retryAfter} s (${early.code}, first ${first.code})`)
    // From the same address on a new connection (a client that reconnects to retry, or a
    // neighbour's first request): held a moment (200 ms and a spread), not the whole Retry-After.
    const reconnected = await login('127.0.0.21')
    assert.equal(reconnected.status, 503)
    assert.ok(reconnected.ms >= 150 && reconnected.ms < expectedHoldMs - 100, `a new connection from the address held ${reconnected.ms.toFixed(0)} ms`)
    // Another client is not held by the first one's refusals.
    const other = await login('127.0.0.22')
    assert.equal(other.status, 503)
    assert.ok(other.ms < 500, `another client's first refusal took ${other.ms.toFixed(0)} ms`)
    t.diagnostic(`first ${first.ms.toFixed(0)} ms, early retry held ${early.ms.toFixed(0)} ms, reconnected ${reconnected.ms.toFixed(0)} ms, other client ${other.ms.toFixed(0)} ms`)
    const metrics = (await request(service, 'GET', '/metrics')).body as string
    assert.match(metrics, /^tollbooth_refusals_held_total 2$/m)
    assert.match(metrics, /^tollbooth_refusals_held 0$/m)
    assert.deepEqual([service.engine.stats().running, service.engine.stats().queued], [1, 1], 'the blockers still held the thread and the queue at the end')
    await service.close()
    assert.equal(await queued, 'HASH_POOL_CLOSED')
    await blockerEnded(running)
  })

  it('does not hold a keep-alive client for a neighbour\'s refusal at the same address (an office behind one NAT)', async (t) => {
    const { service, login, finish, clock } = await refusingService(t)
    const office = '127.0.0.23'
    const alice = new Agent({ localAddress: office, connections: 1 })
    const bob = new Agent({ localAddress: office, connections: 1 })
    t.after(async () => { await Promise.all([alice.close(), bob.close()]) })
    // Bob is refused first, and waits out his Retry-After.
    const bobFirst = await login(bob)
    assert.equal(bobFirst.status, 503)
    clock.advance(bobFirst.retryAfter * 1000 * 1.25 + 100)
    // Alice, on a connection of her own from the same address, is refused now.
    const aliceFirst = await login(alice)
    assert.equal(aliceFirst.status, 503)
    assert.ok(aliceFirst.ms < 500, `Alice's first refusal took ${aliceFirst.ms.toFixed(0)} ms`)
    // Bob, back on time on his own connection, is answered at once: Alice's refusal is not his.
    const bobBack = await login(bob)
    assert.equal(bobBack.status, 503)
    assert.ok(bobBack.ms < 500, `Bob was held ${bobBack.ms.toFixed(0)} ms for his neighbour's refusal`)
    // Alice, straight back, is held until her Retry-After (at most half the login deadline).
    const aliceEarly = await login(alice)
    assert.equal(aliceEarly.status, 503)
    const expectedHoldMs = Math.min(aliceFirst.retryAfter * 1000, service.config.loginDeadlineMs / 2)
    assert.ok(aliceEarly.ms >= expectedHoldMs - 100, `Alice, back early, held ${aliceEarly.ms.toFixed(0)} ms`)
    t.diagnostic(`Bob back ${bobBack.ms.toFixed(0)} ms, Alice back early ${aliceEarly.ms.toFixed(0)} ms`)
    await finish()
  })

  it('does not hold a user\'s first login for its address\'s refusals when its connection served other routes before', async (t) => {
    const { service, login, finish, clock } = await refusingService(t)
    const office = '127.0.0.24'
    // A user who has read on a keep-alive connection for a while; the pacer has never seen it.
    const reader = await agedConnection(t, service, office, clock)
    // A neighbour on a new connection from the same address is refused: the address is noted.
    const neighbour = new Agent({ localAddress: office })
    assert.equal((await login(neighbour)).status, 503)
    await neighbour.close()
    // The reader's first login: refused, at once. Its connection is not young, so the address's
    // refusal is not its own (held 200 to 250 ms as a stranger's while "new" meant new to the pacer).
    const first = await login(reader)
    assert.equal(first.status, 503)
    const metrics = (await request(service, 'GET', '/metrics')).body as string
    assert.match(metrics, /^tollbooth_refusals_held_total 0$/m, `held (${first.ms.toFixed(0)} ms)`)
    t.diagnostic(`the reader's first login refused in ${first.ms.toFixed(0)} ms`)
    await finish()
  })

  it('does not hold a new connection for the refusals of its address\'s older keep-alive connections (users behind one NAT)', async (t) => {
    const { service, login, finish, clock } = await refusingService(t)
    const office = '127.0.0.25'
    const colleague = await agedConnection(t, service, office, clock)
    // A colleague refused on a connection of some time: paced by it alone.
    assert.equal((await login(colleague)).status, 503)
    // A newcomer's first request from the same address: refused at once, not held for the colleague.
    const newcomer = new Agent({ localAddress: office })
    const first = await login(newcomer)
    await newcomer.close()
    assert.equal(first.status, 503)
    const metrics = (await request(service, 'GET', '/metrics')).body as string
    assert.match(metrics, /^tollbooth_refusals_held_total 0$/m, `the newcomer was held (${first.ms.toFixed(0)} ms)`)
    await finish()
  })

  it('still holds a moment a client that reconnects to retry and sends another request before its login on each connection', async (t) => {
    const { service, login, finish } = await refusingService(t)
    // Refused on a connection of its own: its address is noted (from 127.0.0.1, as the raw connection below).
    const refused = new Agent({ localAddress: '127.0.0.1' })
    assert.equal((await login(refused)).status, 503)
    await refused.close()
    // Back at once on a new connection, a read and then the login, pipelined: the login is not the
    // connection's first request, but the connection is a few milliseconds old.
    const body = JSON.stringify({ email: 'someone@example.com', password: 'whatever it is' })
    const connection = rawConnection(service.url)
    t.after(() => { connection.socket.destroy() })
    const sent = performance.now()
    connection.socket.write('GET /api/v1/posts HTTP/1.1\r\nHost: x\r\n\r\n' +
      `POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
    await waitFor('both answered', () => parseResponses(connection.received()).length === 2)
    const ms = performance.now() - sent
    assert.deepEqual(parseResponses(connection.received()).map((response) => response.status), [200, 503])
    assert.ok(ms >= 150, `the login held a moment: answered after ${ms.toFixed(0)} ms`)
    const metrics = (await request(service, 'GET', '/metrics')).body as string
    assert.match(metrics, /^tollbooth_refusals_held_total 1$/m, 'the login was held for its address\'s refusal (answered at once when "new" meant "first on its connection")')
    await finish()
  })

  it('behind a trusted proxy, paces each client by its forwarded address, not by the proxy\'s connection it shares', async (t) => {
    const { service, login: loginThrough, finish } = await refusingService(t, { trustProxy: ['127.0.0.1'] })
    // One connection carries every client, as a proxy's pooled connections do.
    const proxy = new Agent({ connections: 1 })
    t.after(async () => { await proxy.close() })
    const login = async (client: string): Promise<{ status: number, retryAfter: number, ms: number }> => await loginThrough(proxy, { 'x-forwarded-for': client })
    const first = await login('203.0.113.1')
    assert.equal(first.status, 503)
    const other = await login('203.0.113.2')
    assert.equal(other.status, 503)
    assert.ok(other.ms < 500, `another client through the same proxy connection was held ${other.ms.toFixed(0)} ms`)
    const early = await login('203.0.113.1')
    assert.equal(early.status, 503)
    const expectedHoldMs = Math.min(first.retryAfter * 1000, service.config.loginDeadlineMs / 2)
    assert.ok(early.ms >= expectedHoldMs - 100, `the first client, back early, held ${early.ms.toFixed(0)} ms`)
    await finish()
  })

  it('is not paced by a 429 of the login throttle: that is about one account, not about load', async (t) => {
    const service = await startTestService({
      policy: seedPolicy,
      threads: 1,
      // The thread at nice 0, so busy processes beside the test do not starve the wrong passwords'
      // checks; the deadline short enough that one verify running is already too long a wait.
      config: { maxEventLoopDelayMs: 0, loginDeadlineMs: 100, hashThreadNice: 0, loginThrottleAccountFailures: 1, loginThrottleBaseDelaySeconds: 5, loginThrottleMaxDelaySeconds: 5 },
    })
    t.after(async () => { await service.close() })
    const account = await registerUser(service)
    const from = '127.0.0.31'
    const wrong = { email: account.email, password: 'not the password' }
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: wrong, from })).status, 401)
    const throttled = await request(service, 'POST', '/api/v1/auth/login', { body: wrong, from })
    assert.equal(throttled.status, 429)
    // Now the pool is overloaded: the same address's next refusal is a first one, answered at once.
    const stored = slowBcryptHash(12)
    const blockers = Promise.all(Array.from({ length: 8 }, async () => await service.engine.verify('blocker', stored)))
    const sent = performance.now()
    const refused = await request(service, 'POST', '/api/v1/auth/login', { body: { email: 'someone@example.com', password: 'whatever it is' }, from })
    const ms = performance.now() - sent
    assert.equal(refused.status, 503)
    assert.ok(ms < 500, `answered in ${ms.toFixed(0)} ms, not held for the 429's Retry-After`)
    await blockers
  })
})

describe('the pacing keys of a request (connection-age.ts, hash-admission.ts)', () => {
  it('gives its connection\'s age now and when the request arrived, and no connection behind a trusted proxy', () => {
    let now = 1000
    const pacer = new RefusalPacer({ now: () => now })
    const socket = { remoteAddress: '127.0.0.1' }
    pacer.connections.note({ socket } as unknown as http.IncomingMessage)
    now += 60
    // A later request on the connection, answered 20 ms after it arrived.
    const request = { ip: '127.0.0.1', raw: { socket } } as unknown as FastifyRequest
    const keys = connectionKeys(pacer, request, { elapsedTime: 20 } as unknown as FastifyReply)
    assert.equal(keys.connection, socket)
    assert.equal(keys.connectionAgeMs, 60)
    assert.equal(keys.arrivalAgeMs, 40)
    assert.deepEqual(keys.keys, ['ip:127.0.0.1'])
    const proxied = connectionKeys(pacer, { ip: '203.0.113.9', raw: { socket } } as unknown as FastifyRequest, { elapsedTime: 0 } as unknown as FastifyReply, ['account:a'])
    assert.deepEqual(proxied, { keys: ['account:a'] })
  })
})
