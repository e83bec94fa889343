/**
 * Wake-ups for the mail retries due before the dispatcher's next poll: one timer at a time, for
 * the earliest retry; when it fires it wakes the dispatcher and arms itself for the next retry
 * still ahead, so no later retry waits for the poll.
 */
export class RetryWakeups {
  /** When each retry not yet looked for is due (epoch ms). */
  private readonly dueAt: number[] = []
  private timer: NodeJS.Timeout | undefined
  private armedFor: number | undefined
  private closed = false

  /** `slackMs`: the wake-up comes this much after the due time, so the retry is due by then in PostgreSQL's clock too. */
  constructor (private readonly wake: () => void, private readonly slackMs = 5) {}

  /** A retry due in `delayMs`; nothing once closed. */
  add (delayMs: number): void {
    if (this.closed) return
    this.dueAt.push(Date.now() + delayMs)
    this.arm()
  }

  close (): void {
    this.closed = true
    // The global clearTimeout and setTimeout (not timers/promises): tests mock them.
    clearTimeout(this.timer)
    this.timer = undefined
    this.armedFor = undefined
    this.dueAt.length = 0
  }

  private arm (): void {
    if (this.dueAt.length === 0) return
    const earliest = Math.min(...this.dueAt)
    if (this.armedFor !== undefined && this.armedFor <= earliest) return
    clearTimeout(this.timer)
    this.armedFor = earliest
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.armedFor = undefined
      // This wake-up looks for every retry due by now; the later ones keep their time.
      const now = Date.now()
      for (let i = this.dueAt.length - 1; i >= 0; i--) if ((this.dueAt[i] ?? 0) <= now) this.dueAt.splice(i, 1)
      this.wake()
      this.arm()
    }, Math.max(0, earliest - Date.now()) + this.slackMs)
  }
}
