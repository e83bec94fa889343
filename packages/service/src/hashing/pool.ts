/**
 * The tollbooth executor: a fixed Piscina pool with one thread per CPU of the budget, fed from
 * our own queue (queue/scheduler.ts) one task per thread. Our own queue because admission, deadlines
 * and fairness must know exactly what waits and what runs, and because Piscina aborts a running
 * task by terminating its thread; here a running task finishes and its result is discarded.
 * `admit` hands the caller a ticket holding a place; `run` queues the ticket's task without
 * asking admission again.
 */
import { performance } from 'node:perf_hooks'
import { Piscina } from 'piscina'
import { createError, errorRegistry, type ErrorCode, type TollboothError } from '../errors.js'
import type { HashExecutor, HashReply, HashTask, HashWork, HashWorkerData, TimedValue } from './executor.js'
import { HashScheduler, type QueuePlace, type Refusal, type Ticket } from './queue/index.js'
import { errorFields, processWarningLog, TaskCounters } from './task-counters.js'
import { AdmissionTicket, type AdmissionRequest } from './ticket.js'
import type { HashFaultLog, HashPoolStats, HashTaskEvent, HashTaskKind, HashTaskOutcome } from './types.js'

/** Filled and validated by the engine facade; trusted here. */
export interface TollboothPoolOptions {
  threads: number
  maxQueue: number
  /** The worker script (tests substitute one that can crash); default ./worker.js. */
  workerUrl?: string
  /** Each hash thread's nice value (worker.ts applies it to its own thread); default 0. */
  threadNice?: number
  /** Where worker crashes and listener errors are reported; default: process warnings. */
  log?: HashFaultLog
}

/** The hash worker threads' entry (worker.ts). */
export const hashWorkerUrl = new URL('./worker.js', import.meta.url).href
/** How long a place without a deadline holds at most (every request route has one). */
const placeWithoutDeadlineMs = 60_000

type Settle = (timed: TimedValue) => void

interface Pending extends Ticket {
  task: HashTask
  /** Warm-up work: teaches the mean run time but is no request (not counted, no event). */
  internal: boolean
  /** The time budget left at submission, for messages. */
  deadlineMs: number | undefined
  signal: AbortSignal | undefined
  /** An abort once running changes nothing (HashOptions.keepIfStarted). */
  keepIfStarted: boolean
  onAbort: (() => void) | undefined
  /** Cancelled while running: answered at the abort, its result will be discarded. */
  abandoned: boolean
  resolve: Settle
  reject: (err: TollboothError) => void
}

export class TollboothPool implements HashExecutor {
  readonly strategy = 'tollbooth' as const
  readonly threads: number
  private readonly piscina: Piscina<HashTask, HashReply>
  private readonly scheduler: HashScheduler<Pending>
  private readonly counters: TaskCounters
  private closing: Promise<void> | undefined

  constructor (options: TollboothPoolOptions) {
    this.threads = options.threads
    const log = options.log ?? processWarningLog
    this.counters = new TaskCounters(log)
    this.scheduler = new HashScheduler<Pending>({
      threads: options.threads,
      maxQueue: options.maxQueue,
      now: () => performance.now(),
      onExpired: (pending) => { this.expired(pending as Pending) },
    })
    this.piscina = new Piscina<HashTask, HashReply>({
      filename: options.workerUrl ?? hashWorkerUrl,
      workerData: { threadNice: options.threadNice ?? 0 } satisfies HashWorkerData,
      minThreads: options.threads,
      maxThreads: options.threads,
      // Threads are the CPU budget, started once: never torn down and re-warmed under a lull.
      idleTimeout: Infinity,
      concurrentTasksPerWorker: 1,
      // Only pings ever wait in Piscina's queue (hash tasks are sent when a thread is free).
      maxQueue: 1024,
    })
    // A dead worker rejects its own task and Piscina starts another; unheard, 'error' would throw on the main thread.
    this.piscina.on('error', (err: unknown) => { log.warn(errorFields(err), 'a hash worker thread failed') })
  }

  admit (request: AdmissionRequest, now: number): AdmissionTicket | TollboothError {
    const refusal = this.refusal(request, now)
    if (refusal !== undefined) return refusal
    return new AdmissionTicket(request, this.place(request, now), this.admitAgain)
  }

  /** `admit` for a ticket's `readmit`: the new place, or the refusal thrown and counted. */
  private readonly admitAgain = (request: AdmissionRequest): QueuePlace => {
    const now = performance.now()
    const refusal = this.refusal(request, now)
    if (refusal === undefined) return this.place(request, now)
    this.recordRefusal(request.kind, refusal)
    throw refusal
  }

  private place (request: AdmissionRequest, now: number): QueuePlace {
    return this.scheduler.reserve(request.kind, request.deadlineAt ?? now + placeWithoutDeadlineMs)
  }

  run (task: HashTask, work: HashWork): Promise<TimedValue> {
    return this.submit(task, work, false)
  }

  runInternal (task: HashTask): Promise<TimedValue> {
    return this.submit(task, { ticket: new AdmissionTicket({ kind: 'hash', deadlineAt: undefined, client: '', signal: undefined }, undefined, () => undefined), keepIfStarted: false, now: performance.now() }, true)
  }

  /** Why a request would be refused now (admission), or undefined; counts nothing but the decision. */
  private refusal (request: AdmissionRequest, now: number): TollboothError | undefined {
    const closed = this.closedOrCancelled(request)
    if (closed !== undefined) return closed
    return coded(this.scheduler.refusal(request.kind, request.client, request.deadlineAt, now))
  }

  private closedOrCancelled (request: AdmissionRequest): TollboothError | undefined {
    if (this.closing !== undefined) return createError('HASH_POOL_CLOSED')
    if (request.signal?.aborted === true) return createError('HASH_CANCELLED', 'The request was cancelled before it was queued')
    return undefined
  }

  /** A ticket holding its place is queued without a second admission (refused only if closed, cancelled or late); one without is admitted now. */
  private submitRefusal (ticket: AdmissionTicket, internal: boolean, now: number): TollboothError | undefined {
    const { request } = ticket
    if (internal) return this.closing === undefined ? undefined : createError('HASH_POOL_CLOSED')
    if (!ticket.takePlace()) return this.refusal(request, now)
    return this.closedOrCancelled(request) ?? coded(this.scheduler.lateRefusal(request.kind, request.client, request.deadlineAt, now))
  }

  private submit (task: HashTask, { ticket, keepIfStarted, now }: HashWork, internal: boolean): Promise<TimedValue> {
    const kind: HashTaskKind = task.kind === 'hash' ? 'hash' : 'verify'
    const refusal = this.submitRefusal(ticket, internal, now)
    if (refusal !== undefined) {
      this.recordRefusal(kind, refusal)
      return Promise.reject(refusal)
    }
    const { signal, client } = ticket.request
    const deadlineAt = internal ? undefined : ticket.request.deadlineAt

    return new Promise<TimedValue>((resolve, reject) => {
      const pending: Pending = {
        task,
        kind,
        client,
        internal,
        enqueuedAt: now,
        deadlineMs: deadlineAt === undefined ? undefined : deadlineAt - now,
        // With a thread free it starts right now, within any deadline not yet passed (0 ms included).
        deadlineAt: this.scheduler.idleThread() ? undefined : deadlineAt,
        startedAt: 0,
        state: 'new',
        signal,
        keepIfStarted,
        onAbort: undefined,
        abandoned: false,
        resolve,
        reject,
      }
      if (signal !== undefined) {
        pending.onAbort = () => { this.abort(pending) }
        signal.addEventListener('abort', pending.onAbort, { once: true })
      }
      const evicted = this.scheduler.enqueue(pending)
      if (evicted !== undefined) {
        this.detach(evicted)
        this.record(evicted.internal, { kind: evicted.kind, outcome: 'rejected', waitMs: now - evicted.enqueuedAt, runMs: 0 })
        evicted.reject(createError('SERVICE_OVERLOADED', evicted.kind === kind
          ? 'The hash queue is full and this client had the most waiting; its newest request made room for another client'
          : 'The hash queue is full; a queued new hash made room for a login', { retryAfterSeconds: 1 }))
      }
      this.dispatch()
    })
  }

  private dispatch (): void {
    for (const pending of this.scheduler.dispatch()) this.start(pending)
  }

  private start (pending: Pending): void {
    this.piscina.run(pending.task).then(
      (reply) => { this.finish(pending, reply) },
      (err: unknown) => {
        const runMs = performance.now() - pending.startedAt
        this.finish(pending, { ok: false, code: 'INTERNAL', message: `The hash worker failed: ${err instanceof Error ? err.message : String(err)}`, runMs })
      }
    )
  }

  private finish (pending: Pending, reply: HashReply): void {
    this.scheduler.finish(pending, reply.runMs, reply.ok)
    this.detach(pending)
    const totalMs = performance.now() - pending.enqueuedAt
    const runMs = reply.runMs
    const waitMs = Math.max(0, totalMs - runMs)
    const { kind } = pending
    if (pending.abandoned) {
      // Cancelled while running: counted and rejected at the abort; the event carries the real cost.
      if (!pending.internal) this.counters.emit({ kind, outcome: 'cancelled', waitMs, runMs })
    } else if (reply.ok) {
      this.record(pending.internal, { kind, outcome: 'ok', waitMs, runMs })
      pending.resolve({ value: reply.value ?? false, runMs })
    } else {
      this.record(pending.internal, { kind, outcome: 'error', waitMs, runMs })
      const code: ErrorCode = reply.code in errorRegistry ? reply.code as ErrorCode : 'INTERNAL'
      pending.reject(createError(code, reply.message))
    }
    this.dispatch()
  }

  private abort (pending: Pending): void {
    if (this.scheduler.remove(pending)) {
      this.detach(pending)
      this.record(pending.internal, { kind: pending.kind, outcome: 'cancelled', waitMs: performance.now() - pending.enqueuedAt, runMs: 0 })
      pending.reject(createError('HASH_CANCELLED', 'The request was cancelled while queued; no hash was computed'))
    } else if (pending.state === 'running' && !pending.abandoned && !pending.keepIfStarted) {
      // The thread cannot be interrupted mid-hash; answer now and discard the result.
      pending.abandoned = true
      if (!pending.internal) this.counters.counts.cancelled++
      pending.reject(createError('HASH_CANCELLED', 'The request was cancelled while its hash ran; the result is discarded'))
    }
  }

  /** The deadline passed while queued (from the scheduler's timer, or noticed at dispatch). */
  private expired (pending: Pending): void {
    this.detach(pending)
    this.record(pending.internal, { kind: pending.kind, outcome: 'deadline', waitMs: performance.now() - pending.enqueuedAt, runMs: 0 })
    pending.reject(createError('HASH_DEADLINE_EXCEEDED', `No hash thread became free within the ${Math.round(pending.deadlineMs ?? 0)} ms deadline`, {
      retryAfterSeconds: this.scheduler.retryAfterSeconds(pending.kind, pending.client, pending.deadlineMs ?? 0),
    }))
  }

  private detach (pending: Pending): void {
    if (pending.onAbort !== undefined) pending.signal?.removeEventListener('abort', pending.onAbort)
    pending.onAbort = undefined
  }

  private record (internal: boolean, event: HashTaskEvent): void {
    if (!internal) this.counters.record(event)
  }

  recordRefused (event: HashTaskEvent): void {
    this.counters.record(event)
  }

  /** Counts an admission refusal answered; a closed pool's answers are not the queue's doing. */
  private recordRefusal (kind: HashTaskKind, refusal: TollboothError): void {
    if (refusal.code !== 'HASH_POOL_CLOSED') this.recordRefused({ kind, outcome: refusalOutcome(refusal), waitMs: 0, runMs: 0 })
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
      running: this.scheduler.runningCount,
      queued: this.scheduler.queuedCount,
      ...this.counters.counts,
      meanRunMs: this.scheduler.meanRunMs,
      admissionChecks: this.scheduler.admissionChecks,
    }
  }

  onTask (listener: (event: HashTaskEvent) => void): () => void {
    return this.counters.onTask(listener)
  }

  /** Refuses new work, rejects what is queued with HASH_POOL_CLOSED, lets running hashes finish. */
  close (): Promise<void> {
    if (this.closing === undefined) {
      for (const pending of this.scheduler.drain()) {
        this.detach(pending)
        pending.reject(createError('HASH_POOL_CLOSED', 'The hashing pool shut down before this request got a thread'))
      }
      this.closing = this.piscina.close()
    }
    return this.closing
  }
}

/** How an admission refusal is counted. */
export function refusalOutcome (refusal: TollboothError): HashTaskOutcome {
  switch (refusal.code) {
    case 'HASH_CANCELLED': return 'cancelled'
    case 'HASH_DEADLINE_EXCEEDED': return 'deadline'
    default: return 'rejected'
  }
}

/** The scheduler's refusal as the coded error a request is answered with. */
function coded (refusal: Refusal | undefined): TollboothError | undefined {
  return refusal === undefined ? undefined : createError(refusal.code, refusal.message, { retryAfterSeconds: refusal.retryAfterSeconds })
}
