/**
 * The tollbooth executor: a fixed Piscina pool with one thread per CPU of the
 * budget, fed from our own queue one task per thread.
 *
 * Why our own queue in front of Piscina's: admission, deadlines and cancellation
 * all need to know exactly what waits and what runs. Piscina does remove a queued
 * task on abort, but aborting a task it already runs terminates that worker
 * thread (and a new one has to start and warm up); here a running task simply
 * finishes and its result is discarded. Piscina therefore only ever receives a
 * task when a thread is free, and its own queue stays empty (but for pings).
 *
 * Admission: a request with a deadline is refused at once when the expected wait
 * for a thread would pass it, or when the deadline already passed before it got
 * here (`deadlineAt`, a caller's budget); the queue also has a hard length. A
 * request still queued at its deadline, or whose signal fires, leaves the queue
 * before it costs a hash. `checkAdmission` gives the same answer without queueing,
 * so a caller can refuse before its own costly work.
 */
import { performance } from 'node:perf_hooks'
import { Piscina } from 'piscina'
import { createError, errorRegistry, type ErrorCode, type TollboothError } from '../errors.js'
import type { HashExecutor, HashReply, HashTask } from './executor.js'
import type { HashPoolStats, HashRequestOptions, HashTaskEvent, HashTaskKind, HashTaskOutcome } from './types.js'

/** Filled and validated by the engine facade; trusted here. */
export interface TollboothPoolOptions {
  threads: number
  maxQueue: number
}

/** Weight of the newest run time in the running mean: ~the last 10 runs matter. */
const ewmaWeight = 0.2
const maxTimerMs = 2 ** 31 - 1
/** Remaining time assumed for a task already running longer than the mean, as a fraction of it. */
const overrunFloor = 0.1

const workerUrl = new URL('./worker.js', import.meta.url).href

type Settle = (value: string | boolean) => void

interface Counts {
  completed: number
  rejected: number
  deadlineExceeded: number
  cancelled: number
  failed: number
}

interface Pending {
  task: HashTask
  kind: HashTaskKind
  /** Warm-up work: teaches the mean run time but is no request (not counted, no event). */
  internal: boolean
  enqueuedAt: number
  /** The time budget left at submission, for the timer and messages. */
  deadlineMs: number | undefined
  deadlineAt: number | undefined
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined
  timer: NodeJS.Timeout | undefined
  startedAt: number
  /** queued -> running -> done; 'abandoned': cancelled while running, its result will be discarded. */
  state: 'queued' | 'running' | 'abandoned' | 'done'
  resolve: Settle
  reject: (err: TollboothError) => void
}

export class TollboothPool implements HashExecutor {
  readonly strategy = 'tollbooth' as const
  readonly threads: number
  private readonly maxQueue: number
  private readonly piscina: Piscina<HashTask, HashReply>
  /**
   * Two FIFO queues, insertion-ordered Sets (O(1) removal of an expired or aborted task
   * anywhere): a thread takes verifies (logins, the unknown-email dummy) before new hashes
   * (registrations, background re-hashes). A registration's 5 s deadline must not keep the
   * queue too long for any 2 s login to fit: under overload, sign-ups wait or are refused,
   * and people who already have an account get in.
   */
  private readonly queues: Readonly<Record<HashTaskKind, Set<Pending>>> = { verify: new Set(), hash: new Set() }
  private readonly running = new Set<Pending>()
  private readonly listeners = new Set<(event: HashTaskEvent) => void>()
  private meanRunMs = 0
  private closing: Promise<void> | undefined
  private readonly counts: Counts = { completed: 0, rejected: 0, deadlineExceeded: 0, cancelled: 0, failed: 0 }

  constructor (options: TollboothPoolOptions) {
    this.threads = options.threads
    this.maxQueue = options.maxQueue
    this.piscina = new Piscina<HashTask, HashReply>({
      filename: workerUrl,
      minThreads: options.threads,
      maxThreads: options.threads,
      // Threads are the CPU budget, started once: never torn down and re-warmed under a lull.
      idleTimeout: Infinity,
      concurrentTasksPerWorker: 1,
      // Only pings ever wait in Piscina's queue (hash tasks are sent when a thread is free).
      maxQueue: 1024,
    })
    // A worker that fails to start or dies rejects its task; without a listener the
    // pool's 'error' event would throw on the main thread.
    this.piscina.on('error', () => {})
  }

  run (task: HashTask, options: HashRequestOptions = {}): Promise<string | boolean> {
    return this.submit(task, options, false)
  }

  runInternal (task: HashTask): Promise<string | boolean> {
    return this.submit(task, {}, true)
  }

  checkAdmission (kind: HashTaskKind, options: HashRequestOptions = {}): void {
    const refusal = this.refusal(kind, options, performance.now(), false)
    if (refusal !== undefined) throw refusal
  }

  /**
   * Why a request submitted now would be refused (counted as such), or undefined when it
   * would be admitted. Internal work is only refused when the pool is closed.
   */
  private refusal (kind: HashTaskKind, options: HashRequestOptions, now: number, internal: boolean): TollboothError | undefined {
    if (this.closing !== undefined) return createError('HASH_POOL_CLOSED')
    if (options.signal?.aborted === true) {
      this.record(internal, 'cancelled', { kind, outcome: 'cancelled', waitMs: 0, runMs: 0 })
      return createError('HASH_CANCELLED', 'The request was cancelled before it was queued')
    }
    if (internal) return undefined
    const deadlineAt = deadlineAtOf(options, now)
    if (deadlineAt !== undefined && now > deadlineAt) {
      // Spent before it got here (a slow database lookup, a busy event loop): starting it now helps no one.
      this.record(false, 'deadlineExceeded', { kind, outcome: 'deadline', waitMs: 0, runMs: 0 })
      return createError('HASH_DEADLINE_EXCEEDED', `The deadline passed ${Math.round(now - deadlineAt)} ms before the request reached the hash queue`, {
        retryAfterSeconds: retryAfterSeconds(this.expectedWaitMs(kind), 0),
      })
    }
    if (this.running.size < this.threads && this.queuedCount() === 0) return undefined
    if (this.queuedCount() >= this.maxQueue) {
      this.record(false, 'rejected', { kind, outcome: 'rejected', waitMs: 0, runMs: 0 })
      return createError('SERVICE_OVERLOADED', `The hash queue is full (${this.maxQueue} waiting)`, {
        retryAfterSeconds: retryAfterSeconds(this.expectedWaitMs(kind), 0),
      })
    }
    if (deadlineAt !== undefined) {
      const expectedWaitMs = this.expectedWaitMs(kind)
      const budgetMs = deadlineAt - now
      if (expectedWaitMs > budgetMs) {
        this.record(false, 'rejected', { kind, outcome: 'rejected', waitMs: 0, runMs: 0 })
        return createError('SERVICE_OVERLOADED',
          `A hash thread is expected in ${Math.round(expectedWaitMs)} ms, past the deadline in ${Math.round(budgetMs)} ms`,
          { retryAfterSeconds: retryAfterSeconds(expectedWaitMs, budgetMs) })
      }
    }
    return undefined
  }

  private submit (task: HashTask, options: HashRequestOptions, internal: boolean): Promise<string | boolean> {
    const kind: HashTaskKind = task.kind === 'hash' ? 'hash' : 'verify'
    const now = performance.now()
    const refusal = this.refusal(kind, options, now, internal)
    if (refusal !== undefined) return Promise.reject(refusal)
    const { signal } = options
    const deadlineAt = internal ? undefined : deadlineAtOf(options, now)
    const idleThread = this.running.size < this.threads && this.queuedCount() === 0

    return new Promise<string | boolean>((resolve, reject) => {
      const pending: Pending = {
        task,
        kind,
        internal,
        enqueuedAt: now,
        deadlineMs: deadlineAt === undefined ? undefined : deadlineAt - now,
        // With a thread free it starts right now, within any deadline not yet passed (0 ms included).
        deadlineAt: idleThread ? undefined : deadlineAt,
        signal,
        onAbort: undefined,
        timer: undefined,
        startedAt: 0,
        state: 'queued',
        resolve,
        reject,
      }
      if (signal !== undefined) {
        pending.onAbort = () => { this.abort(pending) }
        signal.addEventListener('abort', pending.onAbort, { once: true })
      }
      this.queues[kind].add(pending)
      // Past setTimeout's 2^31-1 ms range a timer would fire at once; such a deadline never comes anyway.
      if (pending.deadlineAt !== undefined && pending.deadlineMs !== undefined && pending.deadlineMs <= maxTimerMs) {
        pending.timer = setTimeout(() => { this.expire(pending) }, pending.deadlineMs)
      }
      this.dispatch()
    })
  }

  /**
   * When a new request would get a thread, in ms from now. With every run taking the
   * mean m, the thread that frees first takes the first in line, and so on: thread
   * free times are the running tasks' remaining times r (0 for an idle thread, never
   * more than m) sorted ascending, and the k-th in line (0-based) starts at
   * r[k mod T] + floor(k / T)·m. Because every r ≤ m, a thread that took a task frees
   * after every r, so the round robin is exact for this model. A new request's k is the
   * queue ahead of it: the verifies for a verify, both queues for a hash (a hash can be
   * overtaken by verifies that come later; its deadline in the queue covers that).
   * A task already past the mean (a slower legacy hash, a throttled CPU) is not about to
   * free its thread this instant: its remaining time is floored at a tenth of the mean,
   * so a request behind busy threads never expects a zero wait.
   */
  private expectedWaitMs (kind: HashTaskKind): number {
    const now = performance.now()
    const mean = this.meanRunMs
    const remaining = new Array<number>(this.threads).fill(0)
    let i = 0
    for (const task of this.running) remaining[i++] = Math.max(mean * overrunFloor, mean - (now - task.startedAt))
    remaining.sort((a, b) => a - b)
    const ahead = kind === 'verify' ? this.queues.verify.size : this.queuedCount()
    return (remaining[ahead % this.threads] ?? 0) + Math.floor(ahead / this.threads) * mean
  }

  private queuedCount (): number {
    return this.queues.verify.size + this.queues.hash.size
  }

  /** The next task to run: the oldest verify, else the oldest hash. */
  private nextQueued (): Pending | undefined {
    return this.queues.verify.values().next().value ?? this.queues.hash.values().next().value
  }

  private dispatch (): void {
    while (this.running.size < this.threads) {
      const pending = this.nextQueued()
      if (pending === undefined) return
      this.queues[pending.kind].delete(pending)
      clearTimeout(pending.timer)
      // Cheap check before expensive work: a timer delayed by a busy loop must not let it run late.
      if (pending.deadlineAt !== undefined && performance.now() > pending.deadlineAt) {
        this.expire(pending, true)
        continue
      }
      this.start(pending)
    }
  }

  private start (pending: Pending): void {
    pending.state = 'running'
    pending.startedAt = performance.now()
    this.running.add(pending)
    this.piscina.run(pending.task).then(
      (reply) => { this.finish(pending, reply) },
      (err: unknown) => {
        const runMs = performance.now() - pending.startedAt
        this.finish(pending, { ok: false, code: 'INTERNAL', message: `The hash worker failed: ${err instanceof Error ? err.message : String(err)}`, runMs })
      }
    )
  }

  private finish (pending: Pending, reply: HashReply): void {
    this.running.delete(pending)
    this.detach(pending)
    const totalMs = performance.now() - pending.enqueuedAt
    const runMs = reply.runMs
    const waitMs = Math.max(0, totalMs - runMs)
    const { kind } = pending
    // Failed runs (a worker crash, a refused input) say nothing about the cost of a hash.
    if (reply.ok) this.meanRunMs = this.meanRunMs === 0 ? runMs : this.meanRunMs + ewmaWeight * (runMs - this.meanRunMs)

    if (pending.state === 'abandoned') {
      // Cancelled while running: counted and rejected at the abort; the event carries the real cost.
      pending.state = 'done'
      if (!pending.internal) this.emit({ kind, outcome: 'cancelled', waitMs, runMs })
    } else if (reply.ok) {
      pending.state = 'done'
      this.record(pending.internal, 'completed', { kind, outcome: 'ok', waitMs, runMs })
      pending.resolve(reply.value ?? false)
    } else {
      pending.state = 'done'
      this.record(pending.internal, 'failed', { kind, outcome: 'error', waitMs, runMs })
      const code: ErrorCode = reply.code in errorRegistry ? reply.code as ErrorCode : 'INTERNAL'
      pending.reject(createError(code, reply.message))
    }
    this.dispatch()
  }

  private abort (pending: Pending): void {
    if (pending.state === 'queued') {
      this.queues[pending.kind].delete(pending)
      this.detach(pending)
      pending.state = 'done'
      this.record(pending.internal, 'cancelled', { kind: pending.kind, outcome: 'cancelled', waitMs: performance.now() - pending.enqueuedAt, runMs: 0 })
      pending.reject(createError('HASH_CANCELLED', 'The request was cancelled while queued; no hash was computed'))
    } else if (pending.state === 'running') {
      // The thread cannot be interrupted mid-hash; answer now and discard the result.
      pending.state = 'abandoned'
      if (!pending.internal) this.counts.cancelled++
      pending.reject(createError('HASH_CANCELLED', 'The request was cancelled while its hash ran; the result is discarded'))
    }
  }

  /** The deadline passed while queued (from the timer, or noticed at dispatch). */
  private expire (pending: Pending, alreadyDequeued = false): void {
    if (pending.state !== 'queued') return
    if (!alreadyDequeued) this.queues[pending.kind].delete(pending)
    this.detach(pending)
    pending.state = 'done'
    this.record(pending.internal, 'deadlineExceeded', { kind: pending.kind, outcome: 'deadline', waitMs: performance.now() - pending.enqueuedAt, runMs: 0 })
    pending.reject(createError('HASH_DEADLINE_EXCEEDED', `No hash thread became free within the ${Math.round(pending.deadlineMs ?? 0)} ms deadline`, {
      retryAfterSeconds: retryAfterSeconds(this.expectedWaitMs(pending.kind), pending.deadlineMs ?? 0),
    }))
  }

  private detach (pending: Pending): void {
    clearTimeout(pending.timer)
    pending.timer = undefined
    if (pending.onAbort !== undefined) pending.signal?.removeEventListener('abort', pending.onAbort)
    pending.onAbort = undefined
  }

  private record (internal: boolean, counter: keyof Counts, event: HashTaskEvent): void {
    if (internal) return
    this.counts[counter]++
    this.emit(event)
  }

  recordRefused (event: HashTaskEvent): void {
    const counter: Record<HashTaskOutcome, keyof Counts> = {
      ok: 'completed', rejected: 'rejected', deadline: 'deadlineExceeded', cancelled: 'cancelled', error: 'failed',
    }
    this.record(false, counter[event.outcome], event)
  }

  private emit (event: HashTaskEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch (err) {
        // A broken metrics listener must not break hashing.
        process.emitWarning(`a hash task listener threw: ${err instanceof Error ? err.message : String(err)}`, 'TollboothWarning')
      }
    }
  }

  async ping (timeoutMs: number): Promise<void> {
    if (this.closing !== undefined) throw createError('HASH_POOL_CLOSED')
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => { reject(createError('NOT_READY', `The hash pool did not answer a ping within ${timeoutMs} ms`)) }, timeoutMs)
    })
    try {
      // Straight to Piscina: waits for at most one running hash, never behind our queue.
      const reply = await Promise.race([this.piscina.run({ kind: 'ping' }), timeout])
      if (!reply.ok) throw createError('NOT_READY', `The hash pool answered a ping with an error: ${reply.message}`)
    } finally {
      clearTimeout(timer)
    }
  }

  stats (): HashPoolStats {
    return {
      strategy: this.strategy,
      threads: this.threads,
      running: this.running.size,
      queued: this.queuedCount(),
      ...this.counts,
      meanRunMs: this.meanRunMs,
    }
  }

  onTask (listener: (event: HashTaskEvent) => void): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  /** Refuses new work, rejects what is queued with HASH_POOL_CLOSED, lets running hashes finish. */
  close (): Promise<void> {
    if (this.closing === undefined) {
      for (const queue of Object.values(this.queues)) {
        for (const pending of queue) {
          this.detach(pending)
          pending.state = 'done'
          pending.reject(createError('HASH_POOL_CLOSED', 'The hashing pool shut down before this request got a thread'))
        }
        queue.clear()
      }
      this.closing = this.piscina.close()
    }
    return this.closing
  }
}

/** The earlier of `deadlineMs` from now and `deadlineAt`, in performance.now() time. */
function deadlineAtOf (options: HashRequestOptions, now: number): number | undefined {
  const fromMs = options.deadlineMs === undefined ? undefined : now + options.deadlineMs
  if (options.deadlineAt === undefined) return fromMs
  return fromMs === undefined ? options.deadlineAt : Math.min(fromMs, options.deadlineAt)
}

/** Whole seconds until a request with the same deadline would be admitted, at least 1. */
function retryAfterSeconds (expectedWaitMs: number, deadlineMs: number): number {
  return Math.max(1, Math.ceil((expectedWaitMs - deadlineMs) / 1000))
}
