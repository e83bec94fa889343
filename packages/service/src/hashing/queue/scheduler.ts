/**
 * The hash queue's rules, with no threads of its own: who waits, who goes next, who is refused
 * and when to come back. The pool (../pool.ts) feeds it and runs what it says; tests drive it with
 * an injected clock and mock timers.
 *
 * - **Logins first.** Verifies go before new hashes (registrations, re-hashes), and at a full
 *   queue a verify evicts the newest queued hash: only hashes already running delay a login.
 * - **Fair between clients.** Within a kind, clients take turns (round robin); at a full queue a
 *   client with less queued evicts the newest request of the client with the most.
 * - **Admission by expected wait** (`expectedWaitMs`): a request expected to start too late to
 *   finish by its deadline, with the margin `defaultAdmissionShare`, is refused at once.
 * - **Deadlines in the queue.** A request that can no longer finish in time leaves the queue
 *   (`onExpired`) before it costs a hash.
 */
import { FairQueue } from './fair-queue.js'
import type { HashTaskKind } from '../types.js'
import { nextMeanRunMs, WaitCalibration } from './wait-calibration.js'

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
 * Admission's headroom: a request must be expected to start within half the time it has left.
 * A longer queue serves no more past capacity, but expires what it admitted whenever the hash
 * threads slow down (docs/explanation/overload.md).
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
 * The place of a request admitted and not queued yet (a `HashTicket`'s: while its body arrives
 * and its lookup runs). Admission counts it as waiting, or a burst arriving within one round
 * trip would find the queue empty and be admitted whole. Released when its hash is submitted,
 * when its request waits or ends, or at its deadline.
 */
export class QueuePlace {
  #released = false
  constructor (readonly kind: HashTaskKind, readonly expiresAt: number, private readonly onRelease: (place: QueuePlace) => void) {}

  get released (): boolean { return this.#released }

  /** Gives the place back; again is nothing. */
  release (): void {
    if (this.#released) return
    this.#released = true
    this.onRelease(this)
  }
}

/** Remaining time assumed for a task already running longer than the mean, as a fraction of it. */
const overrunFloor = 0.1
const maxTimerMs = 2 ** 31 - 1

export class HashScheduler<T extends Ticket> {
  readonly threads: number
  readonly maxQueue: number
  readonly admissionShare: number
  private readonly now: () => number
  private readonly onExpired: (ticket: T) => void
  private readonly queues: Readonly<Record<HashTaskKind, FairQueue<T>>> = { verify: new FairQueue(), hash: new FairQueue() }
  private readonly running = new Set<T>()
  /** The places held by admitted requests not queued yet, by kind, in expiry order (`reserve`). */
  private readonly places: Readonly<Record<HashTaskKind, QueuePlace[]>> = { verify: [], hash: [] }
  private readonly livePlaces: Record<HashTaskKind, number> = { verify: 0, hash: 0 }
  private readonly releasePlace = (place: QueuePlace): void => { this.livePlaces[place.kind]-- }
  private readonly calibration = new WaitCalibration()
  /** Admission decisions made (`refusal`), for `HashPoolStats.admissionChecks`. */
  admissionChecks = 0
  /** Recent mean run time of one hash, ms (0 until the first run). */
  meanRunMs = 0
  /** The factor the model's waits are scaled by, per kind (wait-calibration.ts). */
  get waitCalibration (): Record<HashTaskKind, number> { return this.calibration.factor }

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

  /** Holds a place for an admitted `kind` request until it is queued (`QueuePlace`). Check `refusal` first. */
  reserve (kind: HashTaskKind, expiresAt: number): QueuePlace {
    const place = new QueuePlace(kind, expiresAt, this.releasePlace)
    // In expiry order, not the order made: a request held by pacing reserves late with an early
    // expiry, and an expired place behind a live one would count until the live one went.
    const made = this.places[kind]
    let at = made.length
    while (at > 0 && (made[at - 1]?.expiresAt ?? -Infinity) > expiresAt) at--
    made.splice(at, 0, place)
    this.livePlaces[kind]++
    return place
  }

  /** Places of `kind` still held now (expired ones released). */
  reserved (kind: HashTaskKind, now = this.now()): number {
    const made = this.places[kind]
    let first = made[0]
    while (first !== undefined && (first.released || first.expiresAt <= now)) {
      made.shift()
      first.release()
      first = made[0]
    }
    return this.livePlaces[kind]
  }

  /**
   * Admission: why a `kind` request of `client` with this deadline would be refused now, or
   * undefined (it may evict another, see `enqueue`). Counted in `admissionChecks`, nothing else.
   */
  refusal (kind: HashTaskKind, client: string, deadlineAt: number | undefined, now = this.now()): Refusal | undefined {
    this.admissionChecks++
    const reservedVerifies = this.reserved('verify', now)
    const reservedHashes = this.reserved('hash', now)
    const reservedAhead = kind === 'verify' ? reservedVerifies : reservedVerifies + reservedHashes
    const late = this.lateRefusal(kind, client, deadlineAt, now, reservedAhead)
    if (late !== undefined) return late
    // A thread free for it even once every admitted request has taken one.
    if (this.queuedCount === 0 && this.running.size + reservedVerifies + reservedHashes < this.threads) return undefined
    // The bound counts the places held too: a burst admitted within one round trip has queued
    // nothing yet, and would otherwise be admitted whole however long the queue it makes.
    const waiting = this.queuedCount + reservedVerifies + reservedHashes - Math.max(0, this.threads - this.running.size)
    if (waiting >= this.maxQueue && this.evictionFor(kind, client) === undefined) {
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

  /** The one refusal an admitted request still meets when its hash is queued: its deadline has passed. Not an admission decision. */
  lateRefusal (kind: HashTaskKind, client: string, deadlineAt: number | undefined, now = this.now(), reservedAhead = 0): Refusal | undefined {
    if (deadlineAt === undefined || now <= deadlineAt) return undefined
    return {
      code: 'HASH_DEADLINE_EXCEEDED',
      message: `The deadline passed ${Math.round(now - deadlineAt)} ms before the request reached the hash queue`,
      retryAfterSeconds: retryAfterSeconds(this.expectedWaitMs(kind, client, reservedAhead), 0),
    }
  }

  /** Queues an admitted ticket; returns the one it evicted, if any, for the caller to answer SERVICE_OVERLOADED. Call `dispatch` after. */
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

  /** Seconds until a `kind` request of `client`, due `deadlineMs` after its arrival, would be admitted; at least 1. */
  retryAfterSeconds (kind: HashTaskKind, client: string, deadlineMs: number): number {
    return retryAfterSeconds(this.expectedWaitMs(kind, client), this.waitBudgetMs(deadlineMs))
  }

  /** How long a request due in `deadlineMs` may be expected to wait and still be admitted. */
  private waitBudgetMs (deadlineMs: number): number {
    return (deadlineMs - this.meanRunMs) * this.admissionShare
  }

  /** The hash must finish by the deadline, so it must start one mean run earlier. */
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
   * Tickets to start now, one per free thread, verifies first, clients in turn. A ticket found
   * past its deadline is expired instead (its timer may be late on a busy event loop).
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

  /** What a ticket leaving the queue really waited, against what the model predicted, teaches the calibration. */
  private learnWait (ticket: T, now: number): void {
    if (ticket.predictedWaitMs === undefined || this.meanRunMs === 0) return
    this.calibration.learn(ticket.kind, ticket.predictedWaitMs, now - ticket.enqueuedAt, this.meanRunMs)
  }

  private clearTimer (ticket: T): void {
    clearTimeout(ticket.timer)
    ticket.timer = undefined
  }

  /**
   * When a new `kind` request of `client` would get a thread, in ms from now. With every run
   * taking the mean m, thread free times are the running tasks' remaining times r (0 for an idle
   * thread) sorted ascending, and the k-th in line (0-based) starts at r[k mod T] + floor(k / T)·m.
   * k counts the places reserved ahead (`QueuePlace`), then the verifies ahead in turn order (for
   * a hash: every verify and the hashes ahead; later verifies overtaking it are left to its
   * kind's calibration). A task past the mean keeps a tenth of it, so no one behind busy threads
   * expects 0. The answer is scaled by the kind's `waitCalibration`.
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
function retryAfterSeconds (expectedWaitMs: number, budgetMs: number): number {
  return Math.max(1, Math.ceil((expectedWaitMs - budgetMs) / 1000))
}
