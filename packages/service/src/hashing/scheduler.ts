/**
 * The hash queue's rules, with no threads of its own: who waits, who goes next, who is
 * refused and when to come back. The pool (pool.ts) feeds it requests and runs what it
 * says to run; tests drive it with an injected clock and node:test mock timers.
 *
 * - **Logins first.** Verifies (logins, the unknown-email dummy) go before new hashes
 *   (registrations, background re-hashes), and when the queue is full a verify evicts the
 *   newest queued hash: queued sign-ups never delay a login nor take its place, and a login's
 *   expected wait counts only the verifies ahead of it and the hashes already running. Those
 *   running hashes are the one delay a wave of sign-ups can add: until one finishes, at most
 *   a hash's run per thread, a login waits (and is refused if that would take more of its
 *   deadline than admission allows).
 * - **Fair between clients.** Within a kind, clients (the caller's key: an address) take
 *   turns, round robin; a client's new request waits behind the others' first few, not
 *   behind one client's whole backlog. When the queue is full, a request from a client with
 *   less queued evicts the newest request of the client with the most.
 * - **Admission by expected wait.** A deadline is when the answer is due: a request that is
 *   expected to get a thread too late to finish its hash by then, with a margin for the
 *   threads slowing down meanwhile (`defaultAdmissionShare`), is refused at once (see
 *   `expectedWaitMs`), with the seconds until one would fit.
 * - **Deadlines in the queue.** A request still queued when it can no longer finish by its
 *   deadline leaves the queue (`onExpired`) before it costs a hash; one found so at dispatch too.
 */
import type { HashTaskKind } from './types.js'

export interface SchedulerOptions {
  threads: number
  maxQueue: number
  /** Milliseconds on a monotonic clock: performance.now() in production. */
  now: () => number
  /** Called when a queued ticket's deadline passes (it has left the queue). */
  onExpired: (ticket: Ticket) => void
  /** The share of the time left before a request must start that its expected wait may take (`defaultAdmissionShare`). */
  admissionShare?: number
}

/**
 * Admission's headroom: a request is admitted only if it is expected to start within half the
 * time it has left, so the queue holds about half a deadline of work. A queue of whole
 * deadlines serves no more (it never runs dry past capacity either way) but expires what it
 * admitted whenever the hash threads slow down while it waits: in the `stress` scenario at 1 s
 * think time, where the crowd of cheap requests takes the cores from the hash threads by
 * turns, 30 to 37 admitted logins a run waited their whole 2 s for a 503, and none with half.
 * Admitted logins are then answered in about half the deadline, too. Measurements: bench/README,
 * "Half a deadline of queue".
 */
export const defaultAdmissionShare = 0.5

/** One request as the scheduler sees it; the pool extends it with its task and promise. */
export interface Ticket {
  readonly kind: HashTaskKind
  /** Whose request this is, for fairness; '' for work of the service's own (re-hashes). */
  readonly client: string
  readonly enqueuedAt: number
  /** Undefined: no deadline (or a thread was free when it arrived). */
  readonly deadlineAt: number | undefined
  startedAt: number
  state: 'new' | 'queued' | 'running' | 'done'
  timer?: NodeJS.Timeout | undefined
  /** The wait the model predicted when it was queued (before calibration), ms. */
  predictedWaitMs?: number | undefined
}

export interface Refusal {
  code: 'SERVICE_OVERLOADED' | 'HASH_DEADLINE_EXCEEDED'
  message: string
  retryAfterSeconds: number
}

/**
 * A request admitted at the door and not queued yet: a login between its admission (before its
 * body is read) and its verify's turn in the queue, while its body arrives, its database lookup
 * runs and it waits for its account's other checks. Admission counts it as waiting: admission
 * reads the queue as it is, and without this every login of a burst that arrived within one
 * database round trip saw the same empty queue, was admitted, and cost a lookup before the
 * queue refused the excess (1,000 logins at once: 911 refused after their lookup, at 0.6 s on
 * average, and `GET /me` waited up to 1.2 s behind those lookups for a database connection).
 * Released when its hash is submitted (the ticket takes its place), when it starts to wait for
 * its account's other checks (auth-service.ts: it is not about to queue, and waiting checks
 * would count each other), when its request ends, or, at the latest, at its deadline, when it
 * could no longer be admitted anyway.
 */
export class HashReservation {
  #released = false
  constructor (readonly kind: HashTaskKind, readonly expiresAt: number, private readonly onRelease: (reservation: HashReservation) => void) {}

  get released (): boolean { return this.#released }

  /** Gives its place back; again is nothing. */
  release (): void {
    if (this.#released) return
    this.#released = true
    this.onRelease(this)
  }
}

/** Weight of the newest run time in the running mean: ~the last 10 runs matter. */
const ewmaWeight = 0.2

/** A running mean of run times with `runMs` added: the first run seeds it, each later one weighs `ewmaWeight`. */
export function nextMeanRunMs (meanRunMs: number, runMs: number): number {
  return meanRunMs === 0 ? runMs : meanRunMs + ewmaWeight * (runMs - meanRunMs)
}
/** Weight of the newest measured/predicted wait ratio in its running mean: ~the last 20 matter. */
const calibrationWeight = 0.1
/** Weight of the newest deviation from that mean in the running mean deviation (Jacobson's RTT estimator uses 1/4). */
const calibrationDeviationWeight = 0.25
/** The calibration is the mean ratio plus this many mean deviations: most requests wait no longer than it says. */
const calibrationDeviations = 2
/** The calibration never scales the model by more than this (nor below 1). */
const calibrationBound = 4
/**
 * How far toward 1 a calibration moves for each request that leaves the queue with a prediction
 * and a wait both under a run (which teach nothing). Without it, a high calibration, which admits only requests
 * predicted to start sooner than its share of the deadline over it, would never hear that the
 * machine is quick again: with hashes of over an eighth of the deadline (a half share over the
 * bound of 4), every admitted prediction is under a run and it stuck at its bound. Under a crowd
 * nearly every prediction is a run or more, and the fading does not show; on a machine with
 * threads to spare, the model is right and 1 is where it goes.
 */
const calibrationFadeWeight = 0.02
/** Remaining time assumed for a task already running longer than the mean, as a fraction of it. */
const overrunFloor = 0.1
const maxTimerMs = 2 ** 31 - 1

/** One kind's queue: a FIFO per client, clients served round robin (Map order is the turn order). */
class FairQueue<T extends Ticket> {
  private readonly byClient = new Map<string, Set<T>>()
  size = 0

  add (ticket: T): void {
    let own = this.byClient.get(ticket.client)
    if (own === undefined) {
      own = new Set()
      this.byClient.set(ticket.client, own)
    }
    own.add(ticket)
    this.size++
  }

  delete (ticket: T): boolean {
    const own = this.byClient.get(ticket.client)
    if (own?.delete(ticket) !== true) return false
    if (own.size === 0) this.byClient.delete(ticket.client)
    this.size--
    return true
  }

  /** The next client's oldest ticket; that client goes to the back of the turn order. */
  shift (): T | undefined {
    const first = this.byClient.entries().next().value
    if (first === undefined) return undefined
    const [client, own] = first
    const ticket = own.values().next().value as T
    own.delete(ticket)
    this.size--
    this.byClient.delete(client)
    if (own.size > 0) this.byClient.set(client, own)
    return ticket
  }

  queuedBy (client: string): number {
    return this.byClient.get(client)?.size ?? 0
  }

  /**
   * Tickets served before a new one of `client`: its own backlog, and from every other client
   * at most one more than that backlog (round robin; counting the extra turn is the cautious side).
   */
  aheadOf (client: string): number {
    const own = this.queuedBy(client)
    let ahead = own
    for (const [other, tickets] of this.byClient) if (other !== client) ahead += Math.min(tickets.size, own + 1)
    return ahead
  }

  /** The newest ticket of the client with the most queued, if that is more than `than`. */
  newestOfHeaviest (than: number): T | undefined {
    let heaviest: Set<T> | undefined
    // Ties go to the client latest in the turn order: the newest arrivals are given up first.
    for (const tickets of this.byClient.values()) if (tickets.size > than && tickets.size >= (heaviest?.size ?? 0)) heaviest = tickets
    if (heaviest === undefined) return undefined
    let newest: T | undefined
    for (newest of heaviest);
    return newest
  }

  * drain (): Generator<T> {
    for (const tickets of this.byClient.values()) yield * tickets
    this.byClient.clear()
    this.size = 0
  }
}

export class HashScheduler<T extends Ticket> {
  readonly threads: number
  readonly maxQueue: number
  readonly admissionShare: number
  private readonly now: () => number
  private readonly onExpired: (ticket: T) => void
  private readonly queues: Readonly<Record<HashTaskKind, FairQueue<T>>> = { verify: new FairQueue(), hash: new FairQueue() }
  private readonly running = new Set<T>()
  /**
   * Reservations by kind, in expiry order. Mostly the order made (one deadline per kind, counted
   * from arrival), but a request held by pacing reserves later than those admitted after it
   * arrived, with an earlier expiry: an expired place behind a live one would count until the
   * live one went.
   */
  private readonly reservations: Readonly<Record<HashTaskKind, HashReservation[]>> = { verify: [], hash: [] }
  private readonly liveReservations: Record<HashTaskKind, number> = { verify: 0, hash: 0 }
  private readonly releaseReservation = (reservation: HashReservation): void => { this.liveReservations[reservation.kind]-- }
  /** Recent mean run time of one hash, ms (0 until the first run). */
  meanRunMs = 0
  /**
   * Measured wait over predicted wait, recently, by kind (1: the model is right). The model
   * knows the run time measured inside a worker, not what it cannot see: the main thread
   * handing the next task over late on a busy machine, threads descheduled between tasks, run
   * times drifting faster than the mean follows, and, for a hash, the verifies that arrive
   * after it and go first. Scaling predictions by what queued requests really waited (their
   * sojourn, as CoDel watches) keeps admission honest under contention: a request is admitted
   * only if it is expected to start within its share of its deadline, so few expire in the queue
   * after waiting for nothing. One per kind: registrations overtaken by a stream of logins wait a
   * multiple of what the queue showed when they came (in the DevNest mix, one admitted registration in ten
   * waited its whole 5 s for a 503), and that lesson is theirs; a shared one would lengthen
   * every login's expected wait with it, and a login is never overtaken. Not the mean ratio
   * alone (`learnWait`): in the `stress` scenario, where the hash threads get what a crowd of
   * cheap requests leaves of the cores, one admitted login in six expired with it.
   */
  readonly waitCalibration: Record<HashTaskKind, number> = { verify: 1, hash: 1 }
  /** The running mean of measured/predicted wait ratios by kind (never below 1), and their running mean deviation. */
  private readonly waitRatio: Record<HashTaskKind, { mean: number, deviation: number }> = { verify: { mean: 1, deviation: 0 }, hash: { mean: 1, deviation: 0 } }

  constructor (options: SchedulerOptions) {
    this.threads = options.threads
    this.maxQueue = options.maxQueue
    this.admissionShare = options.admissionShare ?? defaultAdmissionShare
    // NaN would admit everything (no comparison is true), 0 or less would refuse every wait.
    if (!(this.admissionShare > 0 && this.admissionShare <= 1)) throw new RangeError(`admissionShare must be in (0, 1], not ${this.admissionShare}`)
    this.now = options.now
    this.onExpired = options.onExpired as (ticket: T) => void
  }

  get runningCount (): number { return this.running.size }
  get queuedCount (): number { return this.queues.verify.size + this.queues.hash.size }

  /** A thread is free and nobody waits: a request now starts at once. */
  idleThread (): boolean {
    return this.running.size < this.threads && this.queuedCount === 0
  }

  /**
   * Holds a place for an admitted `kind` request until it is queued (`HashReservation`): from
   * now on admission counts it as waiting. Check `refusal` first.
   */
  reserve (kind: HashTaskKind, expiresAt: number): HashReservation {
    const reservation = new HashReservation(kind, expiresAt, this.releaseReservation)
    const made = this.reservations[kind]
    let at = made.length
    while (at > 0 && (made[at - 1]?.expiresAt ?? -Infinity) > expiresAt) at--
    made.splice(at, 0, reservation)
    this.liveReservations[kind]++
    return reservation
  }

  /** Reservations of `kind` still held now (expired ones released), `own` left out. */
  reserved (kind: HashTaskKind, now = this.now(), own?: HashReservation): number {
    const made = this.reservations[kind]
    let first = made[0]
    while (first !== undefined && (first.released || first.expiresAt <= now)) {
      made.shift()
      first.release()
      first = made[0]
    }
    return this.liveReservations[kind] - (own !== undefined && own.kind === kind && !own.released ? 1 : 0)
  }

  /**
   * Why a `kind` request of `client` with this deadline would be refused now, or undefined
   * when it would be admitted (possibly by evicting another, see `enqueue`). Counts nothing.
   * Requests admitted and not queued yet count as waiting ahead of it (verifies before hashes),
   * except its own reservation, `own`.
   */
  refusal (kind: HashTaskKind, client: string, deadlineAt: number | undefined, now = this.now(), own?: HashReservation): Refusal | undefined {
    const reservedVerifies = this.reserved('verify', now, own)
    const reservedHashes = this.reserved('hash', now, own)
    const reservedAhead = kind === 'verify' ? reservedVerifies : reservedVerifies + reservedHashes
    if (deadlineAt !== undefined && now > deadlineAt) {
      // Spent before it got here (a slow database lookup, a busy event loop): starting it now helps no one.
      return {
        code: 'HASH_DEADLINE_EXCEEDED',
        message: `The deadline passed ${Math.round(now - deadlineAt)} ms before the request reached the hash queue`,
        retryAfterSeconds: retryAfterSeconds(this.expectedWaitMs(kind, client, reservedAhead), 0),
      }
    }
    // A thread free for it even once every admitted request has taken one.
    if (this.queuedCount === 0 && this.running.size + reservedVerifies + reservedHashes < this.threads) return undefined
    if (this.queuedCount >= this.maxQueue && this.evictionFor(kind, client) === undefined) {
      return {
        code: 'SERVICE_OVERLOADED',
        message: `The hash queue is full (${this.maxQueue} waiting)`,
        retryAfterSeconds: retryAfterSeconds(this.expectedWaitMs(kind, client, reservedAhead), 0),
      }
    }
    if (deadlineAt !== undefined) {
      const expectedWaitMs = this.expectedWaitMs(kind, client, reservedAhead)
      const budgetMs = this.waitBudgetMs(deadlineAt - now)
      if (expectedWaitMs > budgetMs) {
        return {
          code: 'SERVICE_OVERLOADED',
          message: `A hash thread is expected in ${Math.round(expectedWaitMs)} ms, more than the ${Math.round(budgetMs)} ms a request may wait to finish a ${Math.round(this.meanRunMs)} ms hash by the deadline in ${Math.round(deadlineAt - now)} ms`,
          retryAfterSeconds: retryAfterSeconds(expectedWaitMs, budgetMs),
        }
      }
    }
    return undefined
  }

  /**
   * Queues an admitted ticket (check `refusal` first) and returns the ticket it evicted to make
   * room, if any: the caller answers that one SERVICE_OVERLOADED. Call `dispatch` after.
   */
  enqueue (ticket: T): T | undefined {
    let evicted: T | undefined
    if (this.queuedCount >= this.maxQueue) {
      evicted = this.evictionFor(ticket.kind, ticket.client)
      if (evicted !== undefined) this.remove(evicted)
    }
    ticket.state = 'queued'
    ticket.predictedWaitMs = this.modelWaitMs(ticket.kind, ticket.client)
    this.queues[ticket.kind].add(ticket)
    // Past setTimeout's 2^31-1 ms range a timer would fire at once; such a deadline never comes anyway.
    const deadlineMs = ticket.deadlineAt === undefined ? undefined : this.startBy(ticket.deadlineAt) - this.now()
    if (deadlineMs !== undefined && deadlineMs <= maxTimerMs) {
      ticket.timer = setTimeout(() => { this.expire(ticket) }, Math.max(0, deadlineMs))
    }
    return evicted
  }

  /**
   * The seconds until a `kind` request of `client` with a deadline `deadlineMs` from its arrival
   * would be admitted, for one that could not be: its wait expected now, against the share of
   * that deadline admission allows it (`refusal`), at least 1.
   */
  retryAfterSeconds (kind: HashTaskKind, client: string, deadlineMs: number): number {
    return retryAfterSeconds(this.expectedWaitMs(kind, client), this.waitBudgetMs(deadlineMs))
  }

  /**
   * How long a request whose deadline is `deadlineMs` from now may be expected to wait and still
   * be admitted: the admission share of the time before it must start (`startBy`).
   */
  private waitBudgetMs (deadlineMs: number): number {
    return (deadlineMs - this.meanRunMs) * this.admissionShare
  }

  /**
   * A deadline is when the answer is due: the hash must finish by then, so it must start one
   * mean run earlier. (Admitted logins then finish within the deadline, not a hash after it.)
   */
  private startBy (deadlineAt: number): number {
    return deadlineAt - this.meanRunMs
  }

  /** Which queued ticket a new one would evict from a full queue, if any. */
  private evictionFor (kind: HashTaskKind, client: string): T | undefined {
    if (kind === 'verify') {
      const hash = this.queues.hash.newestOfHeaviest(0)
      if (hash !== undefined) return hash
    }
    return this.queues[kind].newestOfHeaviest(this.queues[kind].queuedBy(client) + 1)
  }

  /**
   * Tickets to start now, one per free thread: the oldest verify of the client whose turn it
   * is, else a hash likewise. A ticket found past its deadline is expired instead (a timer
   * delayed by a busy event loop must not let it run late).
   */
  dispatch (): T[] {
    const started: T[] = []
    const now = this.now()
    while (this.running.size < this.threads) {
      const ticket = this.queues.verify.shift() ?? this.queues.hash.shift()
      if (ticket === undefined) break
      this.clearTimer(ticket)
      if (ticket.deadlineAt !== undefined && now > this.startBy(ticket.deadlineAt)) {
        ticket.state = 'done'
        this.learnWait(ticket, now)
        this.onExpired(ticket)
        continue
      }
      this.learnWait(ticket, now)
      ticket.state = 'running'
      ticket.startedAt = now
      this.running.add(ticket)
      started.push(ticket)
    }
    return started
  }

  /** A running ticket finished; a successful run teaches the mean. Call `dispatch` after. */
  finish (ticket: T, runMs: number, ok: boolean): void {
    this.running.delete(ticket)
    ticket.state = 'done'
    // Failed runs (a worker crash, a refused input) say nothing about the cost of a hash.
    if (ok) this.meanRunMs = nextMeanRunMs(this.meanRunMs, runMs)
  }

  /** Takes a queued ticket out (aborted, evicted); false when it was not queued. */
  remove (ticket: T): boolean {
    if (ticket.state !== 'queued' || !this.queues[ticket.kind].delete(ticket)) return false
    this.clearTimer(ticket)
    ticket.state = 'done'
    return true
  }

  /** Empties the queues (shutdown); returns what was queued. */
  drain (): T[] {
    const drained = [...this.queues.verify.drain(), ...this.queues.hash.drain()]
    for (const ticket of drained) {
      this.clearTimer(ticket)
      ticket.state = 'done'
    }
    return drained
  }

  private expire (ticket: T): void {
    if (!this.remove(ticket)) return
    // It waited its whole budget and would have waited longer: a lower bound, still a lesson.
    this.learnWait(ticket, this.now())
    this.onExpired(ticket)
  }

  /**
   * Updates the calibration with what a ticket leaving the queue really waited. A prediction
   * under one run whose wait was under one run too is mostly the noise of a thread about to
   * free: it teaches nothing, and the calibration fades a little toward 1
   * (`calibrationFadeWeight`). The calibration is the running mean of the ratios plus two running
   * mean deviations (Jacobson's estimator of a round trip's timeout): a noisy machine, where some
   * requests wait twice what others do, is read by its bad cases, not its average ones.
   */
  private learnWait (ticket: T, now: number): void {
    const predicted = ticket.predictedWaitMs
    if (predicted === undefined || this.meanRunMs === 0) return
    const learnt = this.waitRatio[ticket.kind]
    const waitedMs = now - ticket.enqueuedAt
    if (predicted < this.meanRunMs && waitedMs <= this.meanRunMs) {
      learnt.mean -= calibrationFadeWeight * (learnt.mean - 1)
      learnt.deviation -= calibrationFadeWeight * learnt.deviation
    } else {
      // A short prediction that waited longer than a run (an expiry, on a starved machine) is a
      // lesson, measured against one run: the noise of a thread about to free is smaller than that.
      const ratio = Math.min(calibrationBound, waitedMs / Math.max(predicted, this.meanRunMs))
      learnt.deviation += calibrationDeviationWeight * (Math.abs(ratio - learnt.mean) - learnt.deviation)
      // Never below the model: requests ahead that left early (expired, cancelled, evicted) make
      // later ones wait less than predicted, and learning that would admit more, then expire more.
      learnt.mean = Math.max(1, learnt.mean + calibrationWeight * (ratio - learnt.mean))
    }
    this.waitCalibration[ticket.kind] = Math.min(calibrationBound, learnt.mean + calibrationDeviations * learnt.deviation)
  }

  private clearTimer (ticket: T): void {
    clearTimeout(ticket.timer)
    ticket.timer = undefined
  }

  /**
   * When a new `kind` request of `client` would get a thread, in ms from now. With every run
   * taking the mean m, the thread that frees first takes the first in line, and so on: thread
   * free times are the running tasks' remaining times r (0 for an idle thread, never more than
   * m) sorted ascending, and the k-th in line (0-based) starts at r[k mod T] + floor(k / T)·m.
   * A new request's k is what is served before it: the requests admitted and not queued yet
   * (`HashReservation`: verifies for a verify, every one for a hash), then verifies ahead in the turn order for a
   * verify; every verify and the hashes ahead for a hash (a hash can be overtaken by verifies
   * that come later: its kind's calibration learns by how much, and its deadline in the queue
   * bounds the rest). A task already past the mean (a slower legacy hash, a throttled CPU) is
   * not about to free its thread this instant: its remaining time is floored at a tenth of the
   * mean, so no one behind busy threads expects 0. The model's answer is then scaled by its
   * kind's `waitCalibration`.
   */
  expectedWaitMs (kind: HashTaskKind, client: string, reservedAhead = 0): number {
    return this.modelWaitMs(kind, client, reservedAhead) * this.waitCalibration[kind]
  }

  private modelWaitMs (kind: HashTaskKind, client: string, reservedAhead = 0): number {
    const now = this.now()
    const mean = this.meanRunMs
    const remaining = new Array<number>(this.threads).fill(0)
    let i = 0
    for (const ticket of this.running) remaining[i++] = Math.max(mean * overrunFloor, mean - (now - ticket.startedAt))
    remaining.sort((a, b) => a - b)
    const ahead = reservedAhead + (kind === 'verify'
      ? this.queues.verify.aheadOf(client)
      : this.queues.verify.size + this.queues.hash.aheadOf(client))
    return (remaining[ahead % this.threads] ?? 0) + Math.floor(ahead / this.threads) * mean
  }
}

/** Whole seconds until a request that may wait `budgetMs` would be admitted, expecting `expectedWaitMs` now; at least 1. */
export function retryAfterSeconds (expectedWaitMs: number, budgetMs: number): number {
  return Math.max(1, Math.ceil((expectedWaitMs - budgetMs) / 1000))
}
