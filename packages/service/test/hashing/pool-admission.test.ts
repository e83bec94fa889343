import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { isTollboothError, TollboothError } from '../../src/errors.js'
import { bcryptHasher } from '../../src/hashing/hashers/bcrypt.js'
import { createPasswordEngine, type HashTaskEvent, type PasswordEngine, type PasswordEngineOptions } from '../../src/hashing/index.js'
import { cheapPolicy, rejection, seedPolicy, thrown } from './fixtures.js'

interface Started {
  engine: PasswordEngine
  events: HashTaskEvent[]
}

async function start (options: Partial<PasswordEngineOptions> = {}): Promise<Started> {
  // The thread at nice 0, as the test's own: these deadlines are a few mean run times, and a nice-10
  // thread beside busy nice-0 processes runs at a tenth of its pace one moment and whole the next,
  // so a mean measured a moment ago says nothing. The priority has its own test (thread-priority.test.ts).
  const engine = await createPasswordEngine({ policy: cheapPolicy, threads: 1, threadNice: 0, ...options })
  const events: HashTaskEvent[] = []
  engine.onTask((event) => { events.push(event) })
  return { engine, events }
}

function assertRetryAfter (seconds: number | undefined): void {
  assert.ok(seconds !== undefined && Number.isInteger(seconds) && seconds >= 1, `retryAfterSeconds ${String(seconds)}`)
}

describe('pool admission, deadlines and cancellation (1 real worker thread)', () => {
  /**
   * A legacy bcrypt cost-12 hash (hundreds of ms) under a cheap argon2 policy: the thread is
   * busy far longer than the pool's mean run time says, so a queued request really waits.
   */
  let slowStored: string
  const opened: PasswordEngine[] = []
  const open = async (options?: Partial<PasswordEngineOptions>): Promise<Started> => {
    const started = await start(options)
    opened.push(started.engine)
    return started
  }
  before(() => { slowStored = bcryptHasher.hashSync('blocker', { cost: 12 }) })
  after(async () => { await Promise.all(opened.map((engine) => engine.close())) })

  it('starts warm: mean run time seeded, counters at zero', async () => {
    const { engine } = await open()
    const stats = engine.stats()
    assert.ok(stats.meanRunMs > 0, 'seeded by the warm-up hash')
    assert.deepEqual({ ...stats, meanRunMs: 0 }, {
      strategy: 'tollbooth', threads: 1, running: 0, queued: 0, completed: 0, rejected: 0, deadlineExceeded: 0, cancelled: 0, failed: 0, meanRunMs: 0, admissionChecks: 0,
    })
  })

  it('refuses most of a 50-verify flood against a 200 ms deadline at once, with Retry-After', async (t) => {
    // bcrypt cost 10: ~50-100 ms a verify, as in the seed articles.
    const { engine } = await open({ policy: seedPolicy })
    const stored = await engine.hash('correct horse')
    const floodStarted = performance.now()
    const settled: Array<{ ok: boolean, code: string | undefined, retryAfterSeconds: number | undefined, ms: number, order: number }> = []
    await Promise.all(Array.from({ length: 50 }, async () => {
      try {
        await engine.verify('correct horse', stored, { deadlineMs: 200 })
        settled.push({ ok: true, code: undefined, retryAfterSeconds: undefined, ms: performance.now() - floodStarted, order: settled.length })
      } catch (err) {
        assert.ok(isTollboothError(err))
        settled.push({ ok: false, code: err.code, retryAfterSeconds: err.retryAfterSeconds, ms: performance.now() - floodStarted, order: settled.length })
      }
    }))
    const ok = settled.filter((s) => s.ok)
    const overloaded = settled.filter((s) => s.code === 'SERVICE_OVERLOADED')
    const late = settled.filter((s) => s.code === 'HASH_DEADLINE_EXCEEDED')
    assert.equal(ok.length + overloaded.length + late.length, 50, JSON.stringify(settled))
    assert.ok(ok.length >= 1, 'the first ones are served')
    assert.ok(overloaded.length >= 25, `most are refused at admission (refused ${overloaded.length})`)
    for (const refusal of overloaded) assertRetryAfter(refusal.retryAfterSeconds)
    // Refusals arrive before even the first admitted verify finishes: no one waited for a thread.
    const fastestOk = Math.min(...ok.map((s) => s.ms))
    const slowestRefusal = Math.max(...overloaded.map((s) => s.ms))
    t.diagnostic(`${ok.length} served, ${overloaded.length} refused at admission (slowest refusal ${slowestRefusal.toFixed(1)} ms), ${late.length} expired; first success ${fastestOk.toFixed(1)} ms; mean verify ${engine.stats().meanRunMs.toFixed(1)} ms`)
    assert.ok(slowestRefusal < fastestOk, `slowest refusal ${slowestRefusal.toFixed(1)} ms, first success ${fastestOk.toFixed(1)} ms`)
    const stats = engine.stats()
    assert.equal(stats.rejected, overloaded.length)
    assert.equal(stats.completed, ok.length + 1) // + the hash made above
    assert.equal(stats.deadlineExceeded, late.length)
  })

  it('removes a request still queued at its deadline: HASH_DEADLINE_EXCEEDED with Retry-After', async () => {
    const { engine, events } = await open()
    const blocker = engine.verify('blocker', slowStored)
    assert.equal(engine.stats().running, 1, 'the blocker took the free thread at once')
    // The pool's mean run time is that of the cheap policy, so this is admitted, then waits.
    const late = engine.verify('x', slowStored, { deadlineMs: 50 })
    assert.equal(engine.stats().queued, 1, 'admitted: the estimate said it would start in time')
    const err = await rejection(late, 'HASH_DEADLINE_EXCEEDED')
    assertRetryAfter(err.retryAfterSeconds)
    assert.equal(engine.stats().queued, 0, 'it left the queue')
    assert.equal(engine.stats().deadlineExceeded, 1)
    assert.deepEqual((await blocker).match, true)
    assert.equal(engine.stats().completed, 1, 'the expired one never ran')
    const expired = events.find((e) => e.outcome === 'deadline')
    assert.ok(expired !== undefined && expired.runMs === 0 && expired.waitMs > 0)
  })

  it('an abort while queued removes the task before it costs a hash: HASH_CANCELLED', async () => {
    const { engine, events } = await open()
    const blocker = engine.verify('blocker', slowStored)
    assert.equal(engine.stats().running, 1)
    const controller = new AbortController()
    const queued = engine.verify('x', slowStored, { signal: controller.signal })
    assert.equal(engine.stats().queued, 1)
    controller.abort()
    await rejection(queued, 'HASH_CANCELLED')
    assert.equal(engine.stats().queued, 0)
    assert.equal(engine.stats().running, 1, 'the blocker still runs')
    await blocker
    const stats = engine.stats()
    assert.equal(stats.cancelled, 1)
    assert.equal(stats.completed, 1, 'only the blocker completed: the cancelled hash never ran')
    const cancelled = events.filter((e) => e.outcome === 'cancelled')
    assert.equal(cancelled.length, 1)
    assert.equal(cancelled[0]?.runMs, 0)
    // An already-aborted signal is refused before queueing.
    await rejection(engine.hash('x', { signal: AbortSignal.abort() }), 'HASH_CANCELLED')
    assert.equal(engine.stats().cancelled, 2)
  })

  it('an abort while running answers at once; the hash finishes on its thread and is discarded', async () => {
    const { engine, events } = await open()
    const cheapStored = await engine.hash('x')
    const controller = new AbortController()
    const order: string[] = []
    const running = engine.verify('blocker', slowStored, { signal: controller.signal }).then(
      () => { order.push('running resolved') },
      (err: unknown) => { order.push(isTollboothError(err) ? err.code : String(err)) }
    )
    const next = engine.verify('x', cheapStored).then(() => { order.push('next') })
    assert.deepEqual([engine.stats().running, engine.stats().queued], [1, 1], 'the slow verify runs, the next one waits')
    controller.abort()
    await Promise.all([running, next])
    assert.deepEqual(order, ['HASH_CANCELLED', 'next'], 'the cancelled request was answered before the thread was free again')
    const stats = engine.stats()
    assert.equal(stats.cancelled, 1)
    assert.equal(stats.completed, 2, 'the hash made above and the next verify; not the discarded one')
    assert.equal(stats.running, 0)
    assert.equal(stats.threads, 1)
    const cancelled = events.find((e) => e.outcome === 'cancelled')
    assert.ok(cancelled !== undefined && cancelled.runMs > 0, 'the event carries the real cost of the discarded hash')
    await engine.ping() // the worker was not terminated
  })

  it('with keepIfStarted, an abort while running changes nothing: the verify runs to its end and is answered; a queued one is still removed', async () => {
    const { engine } = await open()
    const running = new AbortController()
    const queued = new AbortController()
    const kept = engine.verify('blocker', slowStored, { signal: running.signal, keepIfStarted: true })
    const removed = rejection(engine.verify('blocker', slowStored, { signal: queued.signal, keepIfStarted: true }), 'HASH_CANCELLED')
    assert.deepEqual([engine.stats().running, engine.stats().queued], [1, 1])
    running.abort()
    queued.abort()
    await removed
    assert.deepEqual(await kept, { match: true, needsRehash: true }, 'answered with its result')
    const stats = engine.stats()
    assert.equal(stats.cancelled, 1, 'only the queued one')
    assert.equal(stats.completed, 1)
  })

  it('a 0 ms deadline is met by a free thread and refused behind a busy one; a far deadline never fires', async () => {
    const { engine, events } = await open()
    const stored = await engine.hash('x')
    assert.equal((await engine.verify('x', stored, { deadlineMs: 0 })).match, true)
    const blocker = engine.verify('blocker', slowStored)
    await rejection(engine.verify('x', stored, { deadlineMs: 0 }), 'SERVICE_OVERLOADED')
    const far = engine.verify('x', stored, { deadlineMs: 2 ** 40 })
    await Promise.all([blocker, far])
    assert.equal(engine.stats().deadlineExceeded, 0)
    // The pool catches a listener's errors (a broken metrics listener must not break hashing),
    // so an unsubscribed listener is caught by what it records, not by throwing.
    let heardAfterUnsubscribing = 0
    const unsubscribe = engine.onTask(() => { heardAfterUnsubscribing += 1 })
    unsubscribe()
    const seen = events.length
    await engine.hash('y')
    assert.equal(events.length, seen + 1)
    assert.equal(heardAfterUnsubscribing, 0, 'an unsubscribed listener hears nothing')
  })

  it('takes an absolute deadline: one already past is refused even with a thread free, and never runs', async () => {
    const { engine, events } = await open()
    const stored = await engine.hash('x')
    const err = await rejection(engine.verify('x', stored, { deadlineAt: performance.now() - 1 }), 'HASH_DEADLINE_EXCEEDED')
    assertRetryAfter(err.retryAfterSeconds)
    assert.equal(engine.stats().deadlineExceeded, 1)
    assert.equal(engine.stats().completed, 1, 'only the hash above ran')
    assert.deepEqual(events.at(-1), { kind: 'verify', outcome: 'deadline', waitMs: 0, runMs: 0 })
    // Not yet past: served by the free thread.
    assert.equal((await engine.verify('x', stored, { deadlineAt: performance.now() + 1000 })).match, true)
  })

  it('applies the earlier of deadlineMs and deadlineAt', async () => {
    const { engine } = await open({ maxQueue: 1000 })
    const stored = await engine.hash('x')
    const blocker = engine.verify('blocker', slowStored)
    assert.equal(engine.stats().running, 1)
    // 200 cheap verifies queued behind the blocker (a login waits for logins, not for queued
    // registrations): the expected wait is 200 mean run times, ten times the budget, which is
    // still wide enough that a pause before the call does not pass it.
    const queued = Array.from({ length: 200 }, async () => await engine.verify('queued', stored))
    const budgetMs = 20 * engine.stats().meanRunMs
    await rejection(engine.verify('x', stored, { deadlineMs: 60_000, deadlineAt: performance.now() + budgetMs }), 'SERVICE_OVERLOADED')
    await rejection(engine.verify('x', stored, { deadlineMs: budgetMs, deadlineAt: performance.now() + 60_000 }), 'SERVICE_OVERLOADED')
    await Promise.all([blocker, ...queued])
    assert.equal(engine.stats().rejected, 2)
  })

  it('admit answers as a submission would, counts only the refusals answered, and a ticket is queued without a second admission', async () => {
    const { engine, events } = await open({ maxQueue: 1000 })
    const stored = await engine.hash('x')
    const free = engine.admit('verify', { deadlineMs: 0 }) // a free thread: admitted
    assert.ok(!(free instanceof TollboothError) && free.holdsPlace, 'a ticket holding a place')
    free.release()
    assert.equal(free.holdsPlace, false)
    const blocker = engine.verify('blocker', slowStored)
    assert.equal(engine.stats().running, 1)
    const queued = Array.from({ length: 200 }, async () => await engine.verify('queued', stored))
    const budgetMs = 20 * engine.stats().meanRunMs
    const overloaded = engine.admit('verify', { deadlineAt: performance.now() + budgetMs })
    assert.ok(isTollboothError(overloaded, 'SERVICE_OVERLOADED'), String(overloaded))
    assertRetryAfter(overloaded.retryAfterSeconds)
    assert.equal(engine.stats().rejected, 0, 'a refusal returned is not counted yet')
    thrown(() => engine.refuse('verify', overloaded), 'SERVICE_OVERLOADED')
    assert.equal(engine.stats().rejected, 1, 'counted once answered')
    const late = engine.admit('hash', { deadlineAt: performance.now() - 5 })
    assert.ok(isTollboothError(late, 'HASH_DEADLINE_EXCEEDED'))
    thrown(() => engine.refuse('hash', late), 'HASH_DEADLINE_EXCEEDED')
    const far = engine.admit('verify', { deadlineMs: 60_000 }) // a far deadline: admitted
    assert.ok(!(far instanceof TollboothError))
    const stats = engine.stats()
    assert.equal(stats.deadlineExceeded, 1)
    assert.equal(stats.queued, 200, 'admission queues nothing')
    assert.deepEqual(events.map((e) => `${e.kind}:${e.outcome}`).slice(-2), ['verify:rejected', 'hash:deadline'])
    assert.throws(() => engine.admit('verify', { deadlineAt: Number.NaN }), TypeError)
    assert.throws(() => engine.admit('sign' as 'verify'), TypeError)
    // The admitted ticket's verify is queued as it is: no second admission decision.
    const checks = engine.stats().admissionChecks
    const verified = engine.verify('x', stored, { ticket: far })
    assert.equal(engine.stats().admissionChecks, checks, 'no admission asked at submission')
    assert.equal(far.holdsPlace, false, 'the queue entry took its place')
    await Promise.all([blocker, ...queued])
    assert.equal((await verified).match, true)
    await assert.rejects(engine.verify('x', stored, { ticket: far, deadlineMs: 10 }), TypeError, 'a ticket carries its own request')
  })

  it('lets logins go ahead of queued registrations: a verify is admitted and runs before them', async () => {
    // bcrypt cost 10 (~70 ms a hash on an idle core) on one thread: ten queued registrations are ten mean run times of work.
    const { engine } = await open({ policy: seedPolicy })
    const stored = await engine.hash('an existing account')
    const finished: string[] = []
    const registrations = Array.from({ length: 10 }, async (_, i) => {
      await engine.hash(`new account ${i}`)
      finished.push(`hash ${i}`)
    })
    assert.deepEqual([engine.stats().running, engine.stats().queued], [1, 9], 'the first registration runs, nine wait')
    // A budget of five mean run times (measured here, so a loaded machine widens it): half
    // the registrations ahead, several times the one hash a login waits for.
    const budgetMs = 5 * engine.stats().meanRunMs
    const login = engine.verify('an existing account', stored, { deadlineMs: budgetMs }).then((result) => {
      finished.push('verify')
      return result
    })
    assert.deepEqual(await login, { match: true, needsRehash: false }, 'admitted, not refused for the registrations queued before it')
    await Promise.all(registrations)
    assert.ok(finished.indexOf('verify') <= 1, `the login ran right after the registration under way: ${finished.join(', ')}`)
    // The other way round a registration does count the logins ahead of it.
    const blockers = Array.from({ length: 10 }, async () => await engine.verify('an existing account', stored))
    assert.equal(engine.stats().queued, 9)
    await rejection(engine.hash('too late', { deadlineMs: budgetMs }), 'SERVICE_OVERLOADED')
    await Promise.all(blockers)
  })

  it('has a hard queue length: SERVICE_OVERLOADED past maxQueue even without a deadline', async () => {
    const { engine } = await open({ maxQueue: 2 })
    const blocker = engine.verify('blocker', slowStored)
    const waiting = [engine.hash('a'), engine.hash('b')]
    const err = await rejection(engine.hash('c'), 'SERVICE_OVERLOADED')
    assertRetryAfter(err.retryAfterSeconds)
    await Promise.all([blocker, ...waiting])
    assert.equal(engine.stats().rejected, 1)
    assert.equal(engine.stats().completed, 3)
  })

  it('after close(), queued and new requests reject HASH_POOL_CLOSED; running ones finish', async () => {
    const { engine } = await start()
    const blocker = engine.verify('blocker', slowStored)
    const queued = engine.hash('x')
    const closing = engine.close()
    await rejection(queued, 'HASH_POOL_CLOSED')
    await rejection(engine.hash('y'), 'HASH_POOL_CLOSED')
    await rejection(engine.ping(), 'HASH_POOL_CLOSED')
    assert.equal((await blocker).match, true)
    await closing
    await engine.close() // idempotent
  })
})
