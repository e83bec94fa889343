/**
 * Shared bookkeeping for the load lab's comparison strategies: the pool's counters and
 * listeners (task-counters.ts) and the mean run time. These strategies reproduce what the
 * seed articles did, so they have no admission control, no deadlines and no cancellation:
 * every request waits for as long as it takes (that is what the lab measures).
 */
import { performance } from 'node:perf_hooks'
import { createError, type ErrorCode, type TollboothError } from '../../errors.js'
import {
  AdmissionTicket, nextMeanRunMs, processWarningLog, TaskCounters,
  type AdmissionRequest, type HashExecutor, type HashFaultLog, type HashPoolStats, type HashReply, type HashTask, type HashTaskEvent, type HashTaskKind, type HashWork, type TimedValue,
} from '../../hashing/index.js'

export abstract class CountingExecutor implements HashExecutor {
  abstract readonly strategy: string
  abstract readonly threads: number
  private readonly counters: TaskCounters
  private inFlight = 0
  private meanRunMs = 0
  private closed = false

  constructor (protected readonly log: HashFaultLog = processWarningLog) {
    this.counters = new TaskCounters(log)
  }

  /** Runs the task wherever this strategy runs it; `runMs` is the hash alone where it can be told apart. */
  protected abstract execute (task: HashTask): Promise<HashReply>
  protected abstract shutdown (): Promise<void>

  async run (task: HashTask, _work: HashWork): Promise<TimedValue> {
    return await this.submit(task, false)
  }

  async runInternal (task: HashTask): Promise<TimedValue> {
    return await this.submit(task, true)
  }

  private async submit (task: HashTask, internal: boolean): Promise<TimedValue> {
    if (this.closed) throw createError('HASH_POOL_CLOSED')
    const kind: HashTaskKind = task.kind === 'hash' ? 'hash' : 'verify'
    const started = performance.now()
    this.inFlight++
    let reply: HashReply
    try {
      reply = await this.execute(task)
    } catch (err) {
      reply = { ok: false, code: 'INTERNAL', message: err instanceof Error ? err.message : String(err), runMs: performance.now() - started }
    } finally {
      this.inFlight--
    }
    const waitMs = Math.max(0, performance.now() - started - reply.runMs)
    if (reply.ok) {
      this.meanRunMs = nextMeanRunMs(this.meanRunMs, reply.runMs)
      if (!internal) this.counters.record({ kind, outcome: 'ok', waitMs, runMs: reply.runMs })
      return { value: reply.value ?? false, runMs: reply.runMs }
    }
    if (!internal) this.counters.record({ kind, outcome: 'error', waitMs, runMs: reply.runMs })
    throw createError(reply.code as ErrorCode, reply.message)
  }

  /** No admission here by design: everything is admitted while the executor is open, and holds no place. */
  admit (request: AdmissionRequest, _now: number): AdmissionTicket | TollboothError {
    return this.closed ? createError('HASH_POOL_CLOSED') : new AdmissionTicket(request, undefined, () => undefined)
  }

  async ping (_timeoutMs: number): Promise<void> {
    if (this.closed) throw createError('HASH_POOL_CLOSED')
  }

  recordRefused (event: HashTaskEvent): void {
    this.counters.record(event)
  }

  stats (): HashPoolStats {
    // These strategies cannot see their queue (libuv's, the kernel's): everything in flight counts as running.
    return { strategy: this.strategy, threads: this.threads, running: this.inFlight, queued: 0, ...this.counters.counts, meanRunMs: this.meanRunMs, admissionChecks: 0 }
  }

  onTask (listener: (event: HashTaskEvent) => void): () => void {
    return this.counters.onTask(listener)
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.shutdown()
  }
}
