/**
 * Warn-level lines about database faults, at most one per kind per interval, so an outage under
 * load is one line a second with a count. The first fault of a quiet spell is logged at once; the
 * ones after it are counted and summed up when the interval ends.
 */
export interface WarnLog {
  warn (fields: Record<string, unknown>, message: string): void
}

/** Where faults go when the pool is given no logger: node's process warnings (stderr), never nowhere. */
export const processWarningLog: WarnLog = {
  warn (fields, message) { process.emitWarning(`${message} ${JSON.stringify(fields)}`, 'DatabaseFault') },
}

interface Window {
  repeated: number
  last: Record<string, unknown>
}

/** Itself a WarnLog: hand it to whatever reports faults (the hash engine) to throttle them. */
export class ThrottledFaultLog implements WarnLog {
  private readonly windows = new Map<string, Window>()

  constructor (private readonly log: WarnLog, readonly intervalMs = 1000) {}

  warn (fields: Record<string, unknown>, message: string): void {
    this.report(message, fields)
  }

  report (kind: string, fields: Record<string, unknown>): void {
    const window = this.windows.get(kind)
    if (window !== undefined) {
      window.repeated += 1
      window.last = fields
      return
    }
    this.log.warn(fields, kind)
    this.open(kind)
  }

  private open (kind: string): void {
    this.windows.set(kind, { repeated: 0, last: {} })
    // unref: a pending summary never keeps the process alive.
    setTimeout(() => { this.close(kind) }, this.intervalMs).unref()
  }

  private close (kind: string): void {
    const window = this.windows.get(kind)
    this.windows.delete(kind)
    if (window === undefined || window.repeated === 0) return
    this.log.warn({ ...window.last, repeated: window.repeated, intervalMs: this.intervalMs }, `${kind} (${window.repeated} more in the last ${this.intervalMs} ms)`)
    this.open(kind)
  }
}
