/**
 * One run against one service: the load generators, the /metrics scraper and
 * the /healthz probe side by side, on one clock, from second 1 to the end of
 * the last segment; then everything collected into a RunResult.
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { LoadSession, type SegmentResult } from './load-session.js'
import type { SegmentLoad } from './generator.js'
import { HealthzProbe } from './probe.js'
import type { EndpointStats, GeneratorInfo, LatencySummary, LoadSpec, RunResult, SecondSample, ServerSample, ServiceInfo } from './result.js'
import type { ScenarioRef } from './scenario.js'
import { MetricsScraper } from './scraper.js'
import { summariseRun } from './summary.js'

/** Above this mean event-loop utilisation a generator thread was the bottleneck, not the service. */
const saturatedUtilisation = 0.9
/** Arrivals sent this late (p99) mean the generator could not keep the schedule. */
const saturatedSendLagMs = 25

export interface LabRunOptions {
  label: string
  url: string
  service: ServiceInfo
  /** The service's pid when the lab started it (its process tree is read from /proc). */
  pid?: number | undefined
  scenario: ScenarioRef
  /** Endpoint names in report order. */
  endpointOrder: readonly string[]
  data: unknown
  load: LoadSpec
  /** Unique to the lab command, so runs of one comparison never reuse each other's fresh emails. */
  runId?: string
  onSecond?: (sample: SecondSample, server: ServerSample | undefined) => void
}

/** The most requests a load spec can have in flight: connections to open. */
export function concurrencyOf (load: LoadSpec): number {
  if (load.model === 'open') return load.maxInFlight
  return Math.max(1, load.startVus, ...load.stages.map((stage) => stage.target))
}

/** The segment a whole-load phase runs. */
export function segmentLoadOf (load: LoadSpec): SegmentLoad {
  return load.model === 'closed'
    ? { model: 'closed', startVus: load.startVus, stages: load.stages, thinkTimeMs: load.thinkTimeMs, honourRetryAfter: load.honourRetryAfter }
    : { model: 'open', startRate: load.startRate, stages: load.stages, maxInFlight: load.maxInFlight }
}

export class LabRun {
  readonly segments: SegmentResult[] = []
  private readonly startedAt = new Date()
  private readonly cpuBefore = process.cpuUsage()
  private readonly wallBefore = performance.now()

  private constructor (
    private readonly options: LabRunOptions,
    private readonly session: LoadSession,
    private readonly scraper: MetricsScraper,
    private readonly probe: HealthzProbe
  ) {}

  static async start (options: LabRunOptions): Promise<LabRun> {
    let scraper: MetricsScraper | undefined
    let probe: HealthzProbe | undefined
    const session = await LoadSession.start({
      url: options.url,
      workers: options.load.workers,
      connections: concurrencyOf(options.load),
      requestTimeoutMs: options.load.requestTimeoutMs,
      scenario: options.scenario,
      data: options.data,
      runId: options.runId ?? randomBytes(6).toString('hex'),
      endpointOrder: options.endpointOrder,
      onSecond: (sample) => {
        sample.healthz = probe?.second(sample.t) ?? null
        options.onSecond?.(sample, scraper?.samples.at(-1))
      },
    })
    try {
      scraper = new MetricsScraper({ url: options.url, runStartEpochMs: session.runStartEpochMs, pid: options.pid })
      await scraper.start()
      probe = new HealthzProbe(options.url, options.load.healthzProbeRate, session.runStartEpochMs, options.load.requestTimeoutMs)
      probe.start()
    } catch (err) {
      await session.close(true)
      await scraper?.stop()
      throw err
    }
    return new LabRun(options, session, scraper, probe)
  }

  /** Runs a segment (a phase, a knee step) on every generator; resolves when its requests have all ended. */
  async segment (phase: string | undefined, load: SegmentLoad): Promise<SegmentResult> {
    const result = await this.session.runSegment(phase, load)
    this.segments.push(result)
    return result
  }

  /** Stops everything (at once with `abort`) and collects the run. */
  async finish (abort = false): Promise<{ run: RunResult, warnings: string[] }> {
    await this.session.close(abort)
    const wallSeconds = (performance.now() - this.wallBefore) / 1000
    const cpu = process.cpuUsage(this.cpuBefore)
    await Promise.all([this.probe.stop(), this.scraper.stop()])

    const seconds = this.session.seconds
    // Probes that ended after their second was merged are in now.
    for (const sample of seconds) sample.healthz = this.probe.second(sample.t)
    const lastT = seconds.at(-1)?.t ?? 0
    const server = this.scraper.samples.filter((sample) => sample.t <= lastT)

    const warnings: string[] = []
    const generator = this.generatorInfo((cpu.user + cpu.system) / 1e6 / Math.max(0.001, wallSeconds))
    if (generator.saturated) {
      warnings.push(`${this.options.label}: the load generator was saturated (busiest thread ${Math.round(generator.maxEventLoopUtilisation * 100)} % busy` +
        `${generator.sendLagMs?.p99Ms == null ? '' : `, arrivals sent up to ${Math.round(generator.sendLagMs.p99Ms)} ms late (p99)`}): ` +
        'the figures may describe the lab, not the service; add --workers or lower the load')
    }
    const failedIterations = this.segments.reduce((sum, segment) => sum + segment.iterationErrors, 0)
    const firstError = this.segments.find((segment) => segment.firstIterationError !== null)?.firstIterationError
    if (failedIterations > 0) warnings.push(`${this.options.label}: ${failedIterations} iteration(s) threw in the scenario; the first: ${firstError ?? ''}`)
    if (this.scraper.failedScrapes > 0) warnings.push(`${this.options.label}: ${this.scraper.failedScrapes} /metrics scrape(s) failed or came late; those seconds have no server signals`)
    if (this.probe.failures > 0) warnings.push(`${this.options.label}: ${this.probe.failures} /healthz probe(s) did not get a 200`)
    if (this.probe.skipped > 0) warnings.push(`${this.options.label}: ${this.probe.skipped} /healthz probe(s) were not sent because earlier ones were still waiting`)

    const phased = this.segments.filter((segment) => segment.phase !== undefined)
    const phases: Record<string, EndpointStats> | undefined = phased.length === 0
      ? undefined
      : Object.fromEntries(phased.map((segment) => [segment.phase as string, segment.all]))
    const collected: Omit<RunResult, 'summary'> = {
      label: this.options.label,
      service: this.options.service,
      startedAt: this.startedAt.toISOString(),
      durationMs: Math.round(lastT * 1000),
      seconds,
      server,
      endpoints: this.session.totals.toStats(this.options.endpointOrder),
      all: this.session.totals.all().toStats(),
      healthz: this.probe.summary(),
      ...(phases === undefined ? {} : { phases }),
      generator,
    }
    const run: RunResult = { ...collected, summary: summariseRun(collected) }
    return { run, warnings }
  }

  private generatorInfo (cpuCores: number): GeneratorInfo {
    const lags = this.segments.map((segment) => segment.sendLag).filter((lag): lag is LatencySummary => lag !== null)
    // The worst segment's lag: a knee's last steps are where the generator is tried hardest.
    const sendLagMs = lags.reduce<LatencySummary | null>((worst, lag) => (worst === null || (lag.p99Ms ?? 0) > (worst.p99Ms ?? 0) ? lag : worst), null)
    const maxEventLoopUtilisation = Math.round(this.session.maxEventLoopUtilisation() * 1000) / 1000
    return {
      workers: this.session.workerCount,
      cpuCores: Math.round(cpuCores * 1000) / 1000,
      maxEventLoopUtilisation,
      sendLagMs,
      saturated: maxEventLoopUtilisation > saturatedUtilisation || (sendLagMs?.p99Ms ?? 0) > saturatedSendLagMs,
    }
  }
}
