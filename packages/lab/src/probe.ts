/**
 * Probes /healthz at a steady rate during a run, as a Kubernetes liveness probe
 * would, from connections of its own. Latency counts from each probe's intended
 * time, so a frozen event loop shows as the wait it really caused.
 *
 * The probes are sent and timed in a worker thread of their own (this file is both
 * ends): the lab's main thread merges the generators' seconds and scrapes /metrics,
 * and a probe timed there waited for that work too. Measured in a 100-VU naive login
 * storm on 2 cores: probes timed on the main thread got p99 41 ms, a separate prober
 * of the same service in the same run 19 ms.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { nowEpochMs, secondOf } from './schedule.js'
import { createHistogram, recordMs, summarise, type LatencyHistogram } from './stats.js'
import { HttpTarget } from './http.js'
import type { LatencySummary } from './result.js'

const maxInFlight = 16

interface ProbeSettings { url: string, ratePerSecond: number, runStartEpochMs: number, timeoutMs: number }

type ProbeMessage =
  /** `latencyMs` null: no answer to time (a refused connection, an error). */
  | { type: 'probe', ok: boolean, latencyMs: number | null, endedEpochMs: number }
  | { type: 'skipped' }
  | { type: 'stopped' }

/** The main thread's side: starts the prober thread and keeps what it measures. */
export class HealthzProbe {
  private readonly total: LatencyHistogram = createHistogram()
  private readonly perSecond = new Map<number, LatencyHistogram>()
  private worker: Worker | undefined
  private stopped: Promise<void> = Promise.resolve()
  /** Probes that got no 200 (an error status, a timeout, a refused connection). */
  failures = 0
  /** Probes not sent because `maxInFlight` were still waiting. */
  skipped = 0
  /** Why the prober thread failed, when it did. */
  error: string | undefined

  constructor (private readonly settings: ProbeSettings) {}

  start (): void {
    if (this.settings.ratePerSecond <= 0) return
    const worker = new Worker(new URL(import.meta.url), { workerData: { healthzProbe: this.settings } })
    this.worker = worker
    this.stopped = new Promise((resolve) => {
      worker.on('message', (message: ProbeMessage) => {
        if (message.type === 'probe') this.record(message)
        else if (message.type === 'skipped') this.skipped++
        else void worker.terminate().then(() => { resolve() })
      })
      worker.on('error', (err) => { this.error = err.message })
      worker.on('exit', () => { resolve() })
    })
  }

  private record (message: Extract<ProbeMessage, { type: 'probe' }>): void {
    if (!message.ok) this.failures++
    if (message.latencyMs === null) return
    recordMs(this.total, message.latencyMs)
    const t = secondOf(message.endedEpochMs, this.settings.runStartEpochMs)
    let histogram = this.perSecond.get(t)
    if (histogram === undefined) this.perSecond.set(t, histogram = createHistogram())
    recordMs(histogram, message.latencyMs)
  }

  /** Probes that ended in second `t`, or null when none did. */
  second (t: number): LatencySummary | null {
    const histogram = this.perSecond.get(t)
    return histogram === undefined ? null : summarise(histogram)
  }

  /** Every probe of the run, or null when the probe was off. */
  summary (): LatencySummary | null {
    return this.settings.ratePerSecond <= 0 ? null : summarise(this.total)
  }

  /** Stops sending; resolves when the probes under way have ended and been recorded. */
  async stop (): Promise<void> {
    this.worker?.postMessage('stop')
    await this.stopped
  }
}

/** The prober thread's side: sends, times, reports each probe. */
function runProber (settings: ProbeSettings, post: (message: ProbeMessage) => void, onStop: (stop: () => void) => void): void {
  const target = new HttpTarget(settings.url, { connections: maxInFlight, timeoutMs: settings.timeoutMs })
  const inFlight = new Set<Promise<void>>()
  const intervalMs = 1000 / settings.ratePerSecond
  let next = Math.max(nowEpochMs(), settings.runStartEpochMs)
  let timer: NodeJS.Timeout | undefined
  let stopping = false
  const fire = (intendedEpochMs: number): void => {
    if (inFlight.size >= maxInFlight) {
      post({ type: 'skipped' })
      return
    }
    const probe = target.send({ method: 'GET', path: '/healthz' }).then((response) => {
      const endedEpochMs = nowEpochMs()
      const timed = response.status !== null || response.failure === 'timeout'
      post({ type: 'probe', ok: response.status === 200, latencyMs: timed ? endedEpochMs - intendedEpochMs : null, endedEpochMs })
    }).finally(() => { inFlight.delete(probe) })
    inFlight.add(probe)
  }
  const tick = (): void => {
    if (stopping) return
    while (next <= nowEpochMs()) {
      fire(next)
      next += intervalMs
    }
    timer = setTimeout(tick, Math.max(0, next - nowEpochMs()))
  }
  timer = setTimeout(tick, Math.max(0, next - nowEpochMs()))
  onStop(() => {
    stopping = true
    clearTimeout(timer)
    void Promise.all(inFlight).then(async () => { await target.close() }).finally(() => { post({ type: 'stopped' }) })
  })
}

const proberSettings = isMainThread ? undefined : (workerData as { healthzProbe?: ProbeSettings } | null)?.healthzProbe
if (proberSettings !== undefined && parentPort !== null) {
  const port = parentPort
  runProber(proberSettings, (message) => { port.postMessage(message) }, (stop) => { port.once('message', stop) })
}
