/**
 * The outcome counters and task listeners every executor keeps, in one place: tollbooth's
 * pool and the lab's comparison strategies count and report the same way. A listener that
 * throws does not break hashing, and is not silent either: it is reported to the fault log.
 */
import type { HashFaultLog, HashPoolStats, HashTaskEvent, HashTaskOutcome } from './types.js'

export type Counts = Pick<HashPoolStats, 'completed' | 'rejected' | 'deadlineExceeded' | 'cancelled' | 'failed'>

const counterOf: Record<HashTaskOutcome, keyof Counts> = {
  ok: 'completed', rejected: 'rejected', deadline: 'deadlineExceeded', cancelled: 'cancelled', error: 'failed',
}

/** Where faults go when the engine is given no log: node's process warnings (stderr), never nowhere. */
export const processWarningLog: HashFaultLog = {
  warn (fields, message) { process.emitWarning(`${message} ${JSON.stringify(fields)}`, 'TollboothWarning') },
}

export function errorFields (err: unknown): Record<string, unknown> {
  return { reason: err instanceof Error ? err.message : String(err) }
}

export class TaskCounters {
  readonly counts: Counts = { completed: 0, rejected: 0, deadlineExceeded: 0, cancelled: 0, failed: 0 }
  private readonly listeners = new Set<(event: HashTaskEvent) => void>()

  constructor (private readonly log: HashFaultLog = processWarningLog) {}

  /** Counts the event under its outcome and tells the listeners. */
  record (event: HashTaskEvent): void {
    this.counts[counterOf[event.outcome]]++
    this.emit(event)
  }

  /** Tells the listeners without counting (a cancellation counted when it was answered). */
  emit (event: HashTaskEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch (err) {
        // A broken metrics listener must not break hashing.
        this.log.warn(errorFields(err), 'a hash task listener threw')
      }
    }
  }

  onTask (listener: (event: HashTaskEvent) => void): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }
}
