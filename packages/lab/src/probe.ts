/**
 * Probes /healthz at a steady rate during a run, as a Kubernetes liveness probe
 * would, from connections of its own. Latency counts from each probe's intended
 * time, so a frozen event loop shows as the wait it really caused.
 */
import { nowEpochMs } from './generator.js'
import { createHistogram, recordMs, summarise, type LatencyHistogram } from './stats.js'
import { HttpTarget } from './http.js'
import type { LatencySummary } from './result.js'

const maxInFlight = 16

export class HealthzProbe {
  private readonly target: HttpTarget
  private readonly total: LatencyHistogram = createHistogram()
  private readonly perSecond = new Map<number, LatencyHistogram>()
  private readonly inFlight = new Set<Promise<void>>()
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  /** Probes that got no 200 (an error status, a timeout, a refused connection). */
  failures = 0
  /** Probes not sent because `maxInFlight` were still waiting. */
  skipped = 0

  constructor (url: string, private readonly ratePerSecond: number, private readonly runStartEpochMs: number, timeoutMs: number) {
    this.target = new HttpTarget(url, { connections: maxInFlight, timeoutMs })
  }

  start (): void {
    if (this.ratePerSecond <= 0) return
    const intervalMs = 1000 / this.ratePerSecond
    let next = Math.max(nowEpochMs(), this.runStartEpochMs)
    const tick = (): void => {
      if (this.stopped) return
      while (next <= nowEpochMs()) {
        this.fire(next)
        next += intervalMs
      }
      this.timer = setTimeout(tick, Math.max(0, next - nowEpochMs()))
    }
    this.timer = setTimeout(tick, Math.max(0, next - nowEpochMs()))
  }

  private fire (intendedEpochMs: number): void {
    if (this.inFlight.size >= maxInFlight) {
      this.skipped++
      return
    }
    const probe = this.target.send({ method: 'GET', path: '/healthz' }).then((response) => {
      const ended = nowEpochMs()
      if (response.status !== 200) this.failures++
      if (response.status === null && response.failure !== 'timeout') return
      const latencyMs = ended - intendedEpochMs
      recordMs(this.total, latencyMs)
      const t = Math.max(1, Math.floor((ended - this.runStartEpochMs) / 1000) + 1)
      let histogram = this.perSecond.get(t)
      if (histogram === undefined) {
        histogram = createHistogram()
        this.perSecond.set(t, histogram)
      }
      recordMs(histogram, latencyMs)
    }).finally(() => { this.inFlight.delete(probe) })
    this.inFlight.add(probe)
  }

  /** Probes that ended in second `t`, or null when none did. */
  second (t: number): LatencySummary | null {
    const histogram = this.perSecond.get(t)
    return histogram === undefined ? null : summarise(histogram)
  }

  /** Every probe of the run, or null when the probe was off. */
  summary (): LatencySummary | null {
    return this.ratePerSecond <= 0 ? null : summarise(this.total)
  }

  async stop (): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await Promise.all(this.inFlight)
    await this.target.close()
  }
}
