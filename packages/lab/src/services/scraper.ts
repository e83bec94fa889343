/**
 * The service's signals once a second: /metrics and, for a lab-started service, /proc. Counters become
 * per-second rates; a scrape that fails or is late leaves its second out rather than guessing.
 */
import { HttpTarget } from '../http/index.js'
import type { ServerSample } from '../result.js'
import { nowEpochMs, secondOf } from '../time.js'
import { processTreeUsage, type ProcessTreeUsage } from './process-tree.js'
import { MetricsSnapshot } from './prometheus.js'

interface Reading {
  atEpochMs: number
  metrics: MetricsSnapshot | null
  tree: ProcessTreeUsage | null
}

const ms = (seconds: number | null): number | null => (seconds === null ? null : Math.round(seconds * 1e6) / 1e3)

function delta (now: MetricsSnapshot | null, before: MetricsSnapshot | null, name: string, labels: Record<string, string> = {}): number | null {
  const a = now?.sum(name, labels) ?? null
  const b = before?.sum(name, labels) ?? null
  return a === null || b === null ? null : Math.max(0, a - b)
}

/**
 * An event-loop delay figure without the histogram's sampling interval, which Node's figures
 * include (an idle loop reads about 10 ms); the service says how long it is.
 */
function loopDelay (m: MetricsSnapshot | null, name: string): number | null {
  const seconds = m?.max(name) ?? null
  return seconds === null ? null : Math.max(0, seconds - (m?.max('tollbooth_event_loop_resolution_seconds') ?? 0))
}

/** One ServerSample from two consecutive readings. */
export function serverSample (t: number, now: Reading, before: Reading): ServerSample {
  const seconds = Math.max(0.001, (now.atEpochMs - before.atEpochMs) / 1000)
  const m = now.metrics
  const cpu = delta(m, before.metrics, 'process_cpu_seconds_total')
  const waitCount = delta(m, before.metrics, 'tollbooth_hash_wait_seconds_count')
  const waitSum = delta(m, before.metrics, 'tollbooth_hash_wait_seconds_sum')
  const canaryCount = delta(m, before.metrics, 'tollbooth_libuv_canary_seconds_count')
  const canarySum = delta(m, before.metrics, 'tollbooth_libuv_canary_seconds_sum')
  const canaryPending = m?.max('tollbooth_libuv_canary_pending_seconds') ?? null
  // The canary's mean in this second, or, when a canary is stuck in the pool, how long it has waited so far.
  let canarySeconds = canaryCount !== null && canaryCount > 0 && canarySum !== null ? canarySum / canaryCount : m?.max('tollbooth_libuv_canary_last_seconds') ?? null
  if (canaryPending !== null && (canarySeconds === null || canaryPending > canarySeconds)) canarySeconds = canaryPending
  return {
    t,
    cpuCores: cpu === null ? null : Math.round((cpu / seconds) * 1000) / 1000,
    processTreeCpuCores: now.tree === null || before.tree === null ? null : Math.round((Math.max(0, now.tree.cpuSeconds - before.tree.cpuSeconds) / seconds) * 1000) / 1000,
    rssBytes: m?.sum('process_resident_memory_bytes') ?? null,
    processTreeRssBytes: now.tree?.rssBytes ?? null,
    eventLoopDelayP99Ms: ms(loopDelay(m, 'nodejs_eventloop_lag_p99_seconds')),
    eventLoopDelayMaxMs: ms(loopDelay(m, 'nodejs_eventloop_lag_max_seconds')),
    libuvCanaryMs: ms(canarySeconds),
    hashQueued: m?.sum('tollbooth_hash_pool_queued') ?? null,
    hashRunning: m?.sum('tollbooth_hash_pool_running') ?? null,
    hashWaitMeanMs: waitCount === null || waitSum === null ? null : waitCount === 0 ? 0 : ms(waitSum / waitCount),
    hashRejected: delta(m, before.metrics, 'tollbooth_hash_tasks_total', { outcome: 'rejected' }),
    hashDeadlineExceeded: delta(m, before.metrics, 'tollbooth_hash_tasks_total', { outcome: 'deadline' }),
    hashCancelled: delta(m, before.metrics, 'tollbooth_hash_tasks_total', { outcome: 'cancelled' }),
  }
}

export interface ScraperOptions {
  url: string
  runStartEpochMs: number
  /** The service's pid, when the lab started it: its process tree is read from /proc too. */
  pid?: number | undefined
  timeoutMs?: number
}

export class MetricsScraper {
  readonly samples: ServerSample[] = []
  failedScrapes = 0
  private readonly target: HttpTarget
  private previous: Reading | undefined
  private timer: NodeJS.Timeout | undefined
  private inFlight: Promise<void> | undefined
  private stopped = false

  constructor (private readonly options: ScraperOptions) {
    this.target = new HttpTarget(options.url, { connections: 1, timeoutMs: options.timeoutMs ?? 2000 })
  }

  /** Takes a baseline reading now, then one at the end of every second of the run. */
  async start (): Promise<void> {
    this.previous = await this.read()
    this.schedule()
  }

  private schedule (): void {
    if (this.stopped) return
    const now = nowEpochMs()
    const nextT = secondOf(now, this.options.runStartEpochMs)
    const at = this.options.runStartEpochMs + nextT * 1000
    this.timer = setTimeout(() => {
      // A scrape still waiting (a blocked event loop) is not doubled: this second stays empty.
      if (this.inFlight === undefined) this.inFlight = this.tick(nextT).finally(() => { this.inFlight = undefined })
      this.schedule()
    }, at - now)
  }

  private async read (): Promise<Reading> {
    const tree = this.options.pid === undefined ? null : processTreeUsage(this.options.pid)
    const response = await this.target.send({ method: 'GET', path: '/metrics', readText: true })
    const atEpochMs = nowEpochMs()
    if (response.status !== 200 || response.text === undefined) {
      this.failedScrapes++
      return { atEpochMs, metrics: null, tree }
    }
    return { atEpochMs, metrics: MetricsSnapshot.parse(response.text), tree }
  }

  private async tick (t: number): Promise<void> {
    const reading = await this.read()
    if (this.previous !== undefined && t >= 1) this.samples.push(serverSample(t, reading, this.previous))
    this.previous = reading
  }

  /**
   * Resolves once the sample of second `t` is in (a step's last second is scraped at its very end,
   * as the step's own requests end), or after `timeoutMs` when that scrape failed or came late.
   */
  async reached (t: number, timeoutMs = 2000): Promise<void> {
    const deadline = nowEpochMs() + timeoutMs
    while (!this.stopped && (this.samples.at(-1)?.t ?? 0) < t && nowEpochMs() < deadline) {
      await (this.inFlight ?? new Promise((resolve) => { setTimeout(resolve, 20) }))
    }
  }

  async stop (): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.inFlight
    await this.target.close()
  }
}
