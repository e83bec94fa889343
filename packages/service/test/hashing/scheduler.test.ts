/**
 * The hash queue's rules on their own: no threads, no hashes, no sleeps. The clock is
 * Date.now() under node:test's mock timers, so deadlines pass when the test ticks.
 */
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it, mock } from 'node:test'
import * as scheduler from '../../src/hashing/queue/scheduler.js'
import { HashScheduler, type Ticket } from '../../src/hashing/queue/scheduler.js'
import type { HashTaskKind } from '../../src/hashing/types.js'

interface TestTicket extends Ticket {
  name: string
}

interface Harness {
  scheduler: HashScheduler<TestTicket>
  expired: string[]
  /** Submits like the pool does: refused (the refusal's code) or queued (null), plus what it evicted. */
  submit (name: string, kind: HashTaskKind, client: string, deadlineMs?: number): { refused: string | null, evicted: string | undefined, ticket: TestTicket }
  /** Starts what the scheduler dispatches; returns the names, in order. */
  dispatch (): string[]
}

function harness (threads: number, maxQueue: number, meanRunMs = 100, admissionShare?: number): Harness {
  const expired: string[] = []
  const scheduler = new HashScheduler<TestTicket>({
    threads,
    maxQueue,
    admissionShare,
    now: () => Date.now(),
    onExpired: (ticket) => { expired.push((ticket as TestTicket).name) },
  })
  scheduler.meanRunMs = meanRunMs
  return {
    scheduler,
    expired,
    submit (name, kind, client, deadlineMs) {
      const now = Date.now()
      const deadlineAt = deadlineMs === undefined ? undefined : now + deadlineMs
      const ticket: TestTicket = { name, kind, client, enqueuedAt: now, deadlineAt: scheduler.idleThread() ? undefined : deadlineAt, startedAt: 0, state: 'new' }
      const refusal = scheduler.refusal(kind, client, deadlineAt, now)
      if (refusal !== undefined) return { refused: refusal.code, evicted: undefined, ticket }
      const evicted = scheduler.enqueue(ticket)
      return { refused: null, evicted: evicted?.name, ticket }
    },
    dispatch () {
      return scheduler.dispatch().map((ticket) => ticket.name)
    },
  }
}

/**
 * A deadline (epoch ms) by which the model alone, uncalibrated, would admit a `kind` request of
 * `client` now, with `marginMs` to spare: its wait may take the admission share of the time
 * before it must start, a mean run before the deadline.
 */
function deadlineTheModelAdmits (h: Harness, kind: HashTaskKind, client: string, marginMs: number): number {
  const modelMs = h.scheduler.expectedWaitMs(kind, client) / h.scheduler.waitCalibration[kind]
  return Date.now() + h.scheduler.meanRunMs + (modelMs + marginMs) / h.scheduler.admissionShare
}

/** Runs `check` with `kind`'s calibration set to `value`, then puts it back. */
function withCalibration (h: Harness, kind: HashTaskKind, value: number, check: () => void): void {
  const learnt = h.scheduler.waitCalibration[kind]
  h.scheduler.waitCalibration[kind] = value
  try {
    check()
  } finally {
    h.scheduler.waitCalibration[kind] = learnt
  }
}

/** Finishes every running ticket as one run of `runMs`, then dispatches; returns what started. */
function finishAll (h: Harness, running: TestTicket[], runMs = 100): string[] {
  for (const ticket of running) h.scheduler.finish(ticket, runMs, true)
  return h.dispatch()
}

/**
 * One thread busy and `queued` logins behind it, then `runs` runs that each report `runMs` but
 * are handed over only every `handOverMs` (a starved main thread); returns what is running.
 */
function starvedHandOver (h: Harness, { queued, runs, runMs, handOverMs }: { queued: number, runs: number, runMs: number, handOverMs: number }): TestTicket[] {
  let running = [h.submit('first', 'verify', 'a').ticket]
  h.dispatch()
  for (let i = 0; i < queued; i++) h.submit(`q-${i}`, 'verify', 'a')
  for (let i = 0; i < runs; i++) {
    mock.timers.tick(handOverMs)
    for (const ticket of running) h.scheduler.finish(ticket, runMs, true)
    running = h.scheduler.dispatch()
  }
  return running
}

describe('hash scheduler (injected clock, mock timers)', () => {
  beforeEach(() => { mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 }) })
  afterEach(() => { mock.timers.reset() })

  it('starts at once on a free thread, then queues; verifies go before hashes queued earlier', () => {
    const h = harness(1, 10)
    const first = h.submit('busy', 'hash', 'a')
    assert.deepEqual(h.dispatch(), ['busy'])
    h.submit('signup-1', 'hash', 'a')
    h.submit('signup-2', 'hash', 'b')
    h.submit('login', 'verify', 'c')
    assert.equal(h.scheduler.queuedCount, 3)
    assert.deepEqual(finishAll(h, [first.ticket]), ['login'])
  })

  it('lets a login into a queue full of sign-ups: it evicts the newest queued hash (the shared cap that locked logins out)', () => {
    const h = harness(1, 4)
    h.submit('busy', 'verify', 'x')
    h.dispatch()
    for (let i = 1; i <= 4; i++) assert.equal(h.submit(`signup-${i}`, 'hash', `client-${i}`).refused, null)
    // A fifth sign-up is refused: the queue is full of its own kind, one each.
    assert.equal(h.submit('signup-5', 'hash', 'client-5').refused, 'SERVICE_OVERLOADED')
    const login = h.submit('login', 'verify', 'someone', 2000)
    assert.equal(login.refused, null, 'the login is admitted')
    assert.equal(login.evicted, 'signup-4', 'the newest sign-up made room')
    assert.equal(h.scheduler.queuedCount, 4)
  })

  it('serves clients in turn: a newcomer waits behind one of a flooder\'s requests, not its whole backlog', () => {
    const h = harness(1, 100)
    const busy = h.submit('busy', 'verify', 'flooder')
    h.dispatch()
    for (let i = 1; i <= 10; i++) h.submit(`flood-${i}`, 'verify', 'flooder')
    h.submit('polite-1', 'verify', 'polite')
    const order: string[] = []
    let running = [busy.ticket]
    for (;;) {
      const started = running.map((t) => t.name)
      order.push(...started.filter((n) => n !== 'busy'))
      for (const t of running) h.scheduler.finish(t, 100, true)
      const next = h.scheduler.dispatch()
      if (next.length === 0) break
      running = next
    }
    assert.deepEqual(order.slice(0, 2), ['flood-1', 'polite-1'])
    assert.equal(order.length, 11)
  })

  it('counts requests admitted and not queued yet as waiting: a burst is not admitted whole on an empty queue', () => {
    const h = harness(2, 1000, 100)
    // A burst of logins admitted within one round trip: each holds a place until its verify is submitted.
    const reservations = []
    let refused = 0
    for (let i = 0; i < 60; i++) {
      const deadlineAt = Date.now() + 1000
      const refusal = h.scheduler.refusal('verify', `client-${i}`, deadlineAt)
      if (refusal === undefined) reservations.push(h.scheduler.reserve('verify', deadlineAt))
      else refused++
    }
    // 2 threads x 100 ms, a 1 s deadline: a login must start within 0.9 s and may wait half of
    // it (the admission share), about 9 ahead (without the places: all 60 admitted).
    assert.ok(reservations.length >= 7 && reservations.length <= 11, `${reservations.length} admitted`)
    assert.equal(refused, 60 - reservations.length)
    assert.equal(h.scheduler.reserved('verify'), reservations.length)
    // A hash waits behind the places held by verifies too.
    assert.equal(h.scheduler.refusal('hash', 'signup', Date.now() + 1000)?.code, 'SERVICE_OVERLOADED')
    // Released (submitted, or its request ended): room again. Twice is once.
    for (const reservation of reservations.slice(0, 5)) { reservation.release(); reservation.release() }
    assert.equal(h.scheduler.reserved('verify'), reservations.length - 5)
    assert.ok(h.scheduler.reserved('verify') >= 2, 'places still held')
    assert.equal(h.scheduler.refusal('verify', 'late', Date.now() + 1000), undefined)
    // At its deadline a place no longer counts: it could not be admitted anyway.
    mock.timers.tick(1001)
    assert.equal(h.scheduler.reserved('verify'), 0)
    assert.equal(h.scheduler.refusal('verify', 'after', Date.now() + 1000), undefined)
    assert.ok(h.scheduler.idleThread())
  })

  it('counts the places held against the queue\'s bound: a burst under a long deadline is refused past it, not admitted whole', () => {
    const h = harness(1, 4, 100)
    h.submit('busy', 'verify', 'busy')
    assert.deepEqual(h.dispatch(), ['busy'])
    // Twelve logins at the door within one round trip, none queued yet, a deadline no wait reaches.
    const decisions = Array.from({ length: 12 }, (_, i) => {
      const deadlineAt = Date.now() + 600_000
      const refusal = h.scheduler.refusal('verify', `client-${i}`, deadlineAt)
      if (refusal === undefined) h.scheduler.reserve('verify', deadlineAt)
      return refusal?.code ?? 'admitted'
    })
    assert.deepEqual(decisions, [...Array(4).fill('admitted'), ...Array(8).fill('SERVICE_OVERLOADED')])
    assert.equal(h.scheduler.reserved('verify'), 4)
    assert.equal(h.scheduler.queuedCount, 0)
  })

  it('leaves the free threads out of the bound: places that will start at once wait for nothing', () => {
    const h = harness(2, 1, 100)
    const deadlineAt = Date.now() + 600_000
    // Two places take the two free threads, a third waits: the queue of one is then full.
    for (let i = 0; i < 3; i++) {
      assert.equal(h.scheduler.refusal('verify', `client-${i}`, deadlineAt), undefined, `place ${i}`)
      h.scheduler.reserve('verify', deadlineAt)
    }
    assert.equal(h.scheduler.refusal('verify', 'client-3', deadlineAt)?.code, 'SERVICE_OVERLOADED')
  })

  it('stops counting a place at its expiry, whatever the order the places were made in', () => {
    const h = harness(2, 1000, 100)
    // A request held by pacing reserves after one that arrived later: its place expires first.
    const later = h.scheduler.reserve('verify', Date.now() + 1000)
    const held = h.scheduler.reserve('verify', Date.now() + 500)
    assert.equal(h.scheduler.reserved('verify'), 2)
    mock.timers.tick(501)
    assert.equal(h.scheduler.reserved('verify'), 1, 'the held request\'s place is gone')
    assert.ok(held.released)
    mock.timers.tick(500)
    assert.equal(h.scheduler.reserved('verify'), 0)
    assert.ok(later.released)
  })

  it('admits at once while the places held leave a thread free', () => {
    const h = harness(2, 1000, 100)
    const held = h.scheduler.reserve('verify', Date.now() + 1000)
    // One thread is promised; the other is free: no deadline can refuse.
    assert.equal(h.scheduler.refusal('verify', 'x', Date.now() + 1), undefined)
    const second = h.scheduler.reserve('verify', Date.now() + 1000)
    // Both promised: a 50 ms budget cannot wait for a 100 ms run to end.
    assert.equal(h.scheduler.refusal('verify', 'y', Date.now() + 50)?.code, 'SERVICE_OVERLOADED')
    held.release()
    second.release()
  })

  it('admits a newcomer under a deadline that refuses the flooder\'s next request', () => {
    const h = harness(2, 1000, 100)
    h.submit('busy-1', 'verify', 'flooder')
    h.submit('busy-2', 'verify', 'flooder')
    h.dispatch()
    // 2 threads x 100 ms, a 1 s deadline: half of the 0.9 s before a start fits about 9 queued.
    let admitted = 0
    for (let i = 0; i < 40; i++) if (h.submit(`flood-${i}`, 'verify', 'flooder', 1000).refused === null) admitted++
    assert.ok(admitted >= 7 && admitted <= 11, `the flooder got ${admitted} in`)
    assert.equal(h.submit('flood-more', 'verify', 'flooder', 1000).refused, 'SERVICE_OVERLOADED')
    const newcomer = h.submit('newcomer', 'verify', 'newcomer', 1000)
    assert.equal(newcomer.refused, null)
    assert.ok(h.scheduler.expectedWaitMs('verify', 'other') < 300, 'another newcomer expects to wait about one turn')
  })

  it('on a full queue, a client with less queued evicts the newest request of the client with the most', () => {
    const h = harness(1, 5)
    h.submit('busy', 'verify', 'a')
    h.dispatch()
    for (let i = 1; i <= 5; i++) h.submit(`a-${i}`, 'verify', 'a')
    const b = h.submit('b-1', 'verify', 'b')
    assert.equal(b.refused, null)
    assert.equal(b.evicted, 'a-5')
    // Now a has 4 and b has 1: b may take one more of a's places, but a cannot take b's.
    assert.equal(h.submit('b-2', 'verify', 'b').evicted, 'a-4')
    assert.equal(h.submit('a-6', 'verify', 'a').refused, 'SERVICE_OVERLOADED')
  })

  it('expires a queued request at its deadline with the mocked clock, and never dispatches it', () => {
    // Runs of 10 ms: a 50 ms deadline is admitted behind the busy thread.
    const h = harness(1, 10, 10)
    const busy = h.submit('busy', 'verify', 'a')
    h.dispatch()
    h.submit('short', 'verify', 'b', 50)
    h.submit('long', 'verify', 'c', 5000)
    // Its 10 ms hash must finish by the deadline: it must start by 40 ms.
    mock.timers.tick(39)
    assert.deepEqual(h.expired, [])
    mock.timers.tick(1)
    assert.deepEqual(h.expired, ['short'])
    assert.equal(h.scheduler.queuedCount, 1)
    assert.deepEqual(finishAll(h, [busy.ticket]), ['long'])
  })

  it('expires at dispatch a request whose timer has not fired yet (a late event loop)', () => {
    const h = harness(1, 10, 10)
    const busy = h.submit('busy', 'verify', 'a')
    h.dispatch()
    h.submit('stale', 'verify', 'b', 50)
    h.submit('fresh', 'verify', 'c')
    // The clock moves without running timers, as when the loop was blocked.
    mock.timers.setTime(Date.now() + 100)
    assert.deepEqual(finishAll(h, [busy.ticket]), ['fresh'])
    assert.deepEqual(h.expired, ['stale'])
  })

  it('refuses an admission share outside (0, 1]: NaN would admit everything', () => {
    for (const admissionShare of [Number.NaN, 0, -1, 1.5]) {
      assert.throws(() => harness(1, 10, 100, admissionShare), RangeError, String(admissionShare))
    }
  })

  it('admits half a deadline of queue: what it admitted still starts in time when the threads slow to half speed', () => {
    /** One thread of 100 ms runs, logins with a 1 s deadline until one is refused, then every run takes 200 ms. */
    const expiredAtHalfSpeed = (admissionShare: number): { admitted: number, expired: number } => {
      const h = harness(1, 1000, 100, admissionShare)
      h.submit('busy', 'verify', 'busy')
      let running = h.scheduler.dispatch()
      let admitted = 0
      while (h.submit(`login-${admitted}`, 'verify', `c-${admitted}`, 1000).refused === null) admitted++
      while (running.length > 0) {
        mock.timers.tick(200)
        for (const ticket of running) h.scheduler.finish(ticket, 200, true)
        running = h.scheduler.dispatch()
      }
      return { admitted, expired: h.expired.length }
    }
    // The default: a login may wait half of the 0.9 s before it must start, so 4 are admitted
    // (starts expected at 100 to 400 ms); at half speed they start by 800 ms, all in time.
    assert.equal(scheduler.defaultAdmissionShare, 0.5)
    assert.deepEqual(expiredAtHalfSpeed(scheduler.defaultAdmissionShare), { admitted: 4, expired: 0 })
    // A queue of whole deadlines admits twice as many (starts expected up to 900 ms) and serves
    // none more in time: the rest wait their deadline out for a 503.
    assert.deepEqual(expiredAtHalfSpeed(1), { admitted: 9, expired: 5 })
  })

  it('expects the k-th in line at r[k mod T] + floor(k / T) x mean, never 0 behind busy threads', () => {
    const h = harness(2, 100, 100)
    h.submit('r1', 'verify', 'a')
    h.dispatch()
    mock.timers.tick(30)
    h.submit('r2', 'verify', 'a')
    h.dispatch()
    mock.timers.tick(20)
    // Running: r1 started 50 ms ago (50 left), r2 30 ms... 20 ms ago (80 left).
    assert.equal(h.scheduler.expectedWaitMs('verify', 'a'), 50)
    h.submit('q1', 'verify', 'a')
    assert.equal(h.scheduler.expectedWaitMs('verify', 'a'), 80)
    h.submit('q2', 'verify', 'a')
    assert.equal(h.scheduler.expectedWaitMs('verify', 'a'), 150)
    // A hash waits behind every verify.
    assert.equal(h.scheduler.expectedWaitMs('hash', 'z'), 150)
    mock.timers.tick(500)
    assert.equal(h.scheduler.expectedWaitMs('verify', 'a'), 110, 'overrunning tasks count a tenth of the mean')
  })

  it('refuses a request whose deadline already passed, and gives Retry-After in whole seconds past the budget', () => {
    const h = harness(1, 1000, 100)
    h.submit('busy', 'verify', 'a')
    h.dispatch()
    const late = h.scheduler.refusal('verify', 'a', Date.now() - 1)
    assert.equal(late?.code, 'HASH_DEADLINE_EXCEEDED')
    for (let i = 0; i < 25; i++) h.submit(`q-${i}`, 'verify', 'a')
    // 25 ahead at 100 ms: 2.6 s of wait, where a 1 s deadline lets a login wait half of the 0.9 s
    // before it must start, 0.45 s -> come back in 3 s (2 if it could wait the whole 0.9 s).
    const refusal = h.scheduler.refusal('verify', 'a', Date.now() + 1000)
    assert.equal(refusal?.code, 'SERVICE_OVERLOADED')
    assert.equal(refusal?.retryAfterSeconds, 3)
    // The same for one that expired in the queue with that deadline (pool.ts answers it so).
    assert.equal(h.scheduler.retryAfterSeconds('verify', 'a', 1000), 3)
  })

  it('calibrates the expected wait on what queued requests really waited (a machine slower than the runs say)', () => {
    const h = harness(1, 100, 100)
    // Each run reports 100 ms, as measured inside its worker, but a thread is handed its next
    // task only every 200 ms (a starved main thread): requests wait twice what the model says.
    let running = starvedHandOver(h, { queued: 30, runs: 20, runMs: 100, handOverMs: 200 })
    assert.ok(h.scheduler.waitCalibration.verify > 1.5, `calibration ${h.scheduler.waitCalibration.verify.toFixed(2)}`)
    // A deadline the model alone would admit with 50 ms to spare; calibrated, the wait is about twice that.
    const deadlineAt = deadlineTheModelAdmits(h, 'verify', 'a', 50)
    assert.equal(h.scheduler.refusal('verify', 'a', deadlineAt)?.code, 'SERVICE_OVERLOADED', 'refused on the calibrated wait')
    withCalibration(h, 'verify', 1, () => assert.equal(h.scheduler.refusal('verify', 'a', deadlineAt), undefined, 'the model alone admits it'))
    // When the machine is quick again, the calibration comes back down.
    for (let i = 0; i < 60 && running.length > 0; i++) {
      mock.timers.tick(100)
      for (const ticket of running) h.scheduler.finish(ticket, 100, true)
      for (let k = 0; k < 2; k++) h.submit(`more-${i}-${k}`, 'verify', 'a')
      running = h.scheduler.dispatch()
    }
    assert.ok(h.scheduler.waitCalibration.verify < 1.3, `calibration back to ${h.scheduler.waitCalibration.verify.toFixed(2)}`)
  })

  it('calibrates hashes on their own: sign-ups overtaken by a stream of logins learn it, and logins do not wait for it', () => {
    const h = harness(1, 100, 100)
    let running = [h.submit('first', 'verify', 'a').ticket]
    h.dispatch()
    for (let i = 0; i < 20; i++) h.submit(`signup-${i}`, 'hash', `s-${i}`)
    // The machine keeps time (every run 100 ms, handed over at once), but a login arrives at
    // every other run and goes ahead of the queued sign-ups: each waits about twice what the
    // queue showed when it came. New sign-ups keep the queue as it was.
    for (let i = 0; i < 60; i++) {
      if (i % 2 === 0) h.submit(`login-${i}`, 'verify', `l-${i}`)
      mock.timers.tick(100)
      for (const ticket of running) h.scheduler.finish(ticket, 100, true)
      running = h.scheduler.dispatch()
      if (running.some((ticket) => ticket.kind === 'hash')) h.submit(`signup-more-${i}`, 'hash', `m-${i}`)
    }
    const { verify, hash } = h.scheduler.waitCalibration
    assert.ok(hash > 1.5, `the sign-ups' calibration ${hash.toFixed(2)}`)
    assert.ok(verify < 1.1, `the logins' calibration ${verify.toFixed(2)}, never overtaken`)
    // A new sign-up behind the queue, with a deadline the model alone would admit (150 ms to spare).
    const deadlineAt = deadlineTheModelAdmits(h, 'hash', 'late', 150)
    assert.equal(h.scheduler.refusal('hash', 'late', deadlineAt)?.code, 'SERVICE_OVERLOADED', 'refused on the sign-ups\' calibration')
    withCalibration(h, 'hash', 1, () => assert.equal(h.scheduler.refusal('hash', 'late', deadlineAt), undefined, 'the model alone admits it'))
    // A login is admitted on the model as it is: one run ahead of it at most.
    assert.equal(h.scheduler.refusal('verify', 'late', Date.now() + 400), undefined)
  })

  it('lets a calibration fade while nothing teaches it: one at its bound with slow hashes would never learn again', () => {
    // Hashes of 1 s, a login deadline of 2 s: a login must start within 1 s.
    const h = harness(1, 100, 1000)
    // A starved main thread: a thread is handed its next task only every 4 s, for 40 runs.
    let running = starvedHandOver(h, { queued: 40, runs: 40, runMs: 1000, handOverMs: 4000 })
    assert.ok(h.scheduler.waitCalibration.verify > 3, `calibration ${h.scheduler.waitCalibration.verify.toFixed(2)}`)
    // The machine is quick again. A login every 250 ms, a run every second handed over at once:
    // with the calibration where it was, only logins predicted to start within half of 1 s / 4
    // would ever be admitted, and such predictions (under a run) teach nothing.
    const start = (): void => { if (running.length === 0) running = h.scheduler.dispatch() }
    for (let ms = 0; ms < 120_000; ms += 250) {
      h.submit(`login-${ms}`, 'verify', `c-${ms}`, 2000)
      start()
      mock.timers.tick(250)
      if (ms % 1000 === 750) {
        for (const ticket of running) h.scheduler.finish(ticket, 1000, true)
        running = []
        start()
      }
    }
    assert.ok(h.scheduler.waitCalibration.verify < 1.5, `calibration ${h.scheduler.waitCalibration.verify.toFixed(2)} two minutes later`)
    // A login behind a run three quarters done (0.25 s to wait; it may wait half of the 1 s
    // before it must start) is admitted again.
    for (const ticket of running) h.scheduler.finish(ticket, 1000, true)
    h.scheduler.drain()
    h.submit('nearly-done', 'verify', 'x')
    h.dispatch()
    mock.timers.tick(750)
    assert.equal(h.scheduler.refusal('verify', 'late', Date.now() + 2000), undefined)
  })

  it('keeps a high calibration while admitted requests still wait longer than a run, short predictions or not', () => {
    // Hashes of 1 s, a 2 s deadline, and the starved hand-over goes on: only logins predicted to
    // start within an eighth of a run are admitted, and each waits seconds, then expires.
    const h = harness(1, 100, 1000)
    let running = starvedHandOver(h, { queued: 40, runs: 40, runMs: 1000, handOverMs: 4000 })
    assert.ok(h.scheduler.waitCalibration.verify > 3)
    h.scheduler.drain()
    for (let i = 0; i < 60; i++) {
      h.submit(`login-${i}`, 'verify', `c-${i}`, 2000)
      mock.timers.tick(4000)
      for (const ticket of running) h.scheduler.finish(ticket, 1000, true)
      running = h.scheduler.dispatch()
    }
    assert.ok(h.scheduler.waitCalibration.verify > 3, `calibration ${h.scheduler.waitCalibration.verify.toFixed(2)} while the machine is still starved`)
  })

  it('reads a noisy machine by its bad cases: requests waiting one to three times the model raise the calibration past their mean', () => {
    const h = harness(1, 100, 100)
    let running = [h.submit('first', 'verify', 'a').ticket]
    h.dispatch()
    for (let i = 0; i < 2; i++) h.submit(`q-${i}`, 'verify', 'a')
    // Two requests queued, one more a run: the hand-over is prompt for four runs, then three
    // times late for four, so some requests wait their prediction and others three times it.
    for (let i = 0; i < 80; i++) {
      h.submit(`more-${i}`, 'verify', 'a')
      mock.timers.tick(Math.floor(i / 4) % 2 === 0 ? 100 : 300)
      for (const ticket of running) h.scheduler.finish(ticket, 100, true)
      running = h.scheduler.dispatch()
    }
    // The mean of the ratios alone reads 2.12 here.
    assert.ok(h.scheduler.waitCalibration.verify > 2.8, `calibration ${h.scheduler.waitCalibration.verify.toFixed(2)}, over the mean of the ratios`)
  })

  it('drains on shutdown and clears every timer', () => {
    const h = harness(1, 10, 10)
    h.submit('busy', 'verify', 'a')
    h.dispatch()
    h.submit('q1', 'verify', 'a', 100)
    h.submit('q2', 'hash', 'b', 100)
    assert.deepEqual(h.scheduler.drain().map((t) => t.name).sort(), ['q1', 'q2'])
    mock.timers.tick(1000)
    assert.deepEqual(h.expired, [])
    assert.equal(h.scheduler.queuedCount, 0)
  })
})
