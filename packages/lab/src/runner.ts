/**
 * One run against one service: the load generators, the /metrics scraper and the /healthz probe
 * side by side, on one clock, from second 1 to the end of the last segment; then everything
 * collected into a RunResult.
 */
import { performance } from 'node:perf_hooks'
import type { SegmentLoad } from './generator.js'
import { LoadSession, type SegmentResult } from './load-session.js'
import { HealthzProbe } from './probe.js'
import type { GeneratorInfo, LatencySummary, LoadSpec, RunResult, RunSummary, SecondSample, ServerSample, ServiceInfo } from './result.js'
import type { ScenarioRef } from './scenario.js'
import { MetricsScraper } from './scraper.js'
import { errorTotal } from './stats.js'

/** Above this mean event-loop utilisation a generator thread was the bottleneck, not the service. */
const saturatedUtilisation = 0.9
/** Arrivals sent this late (p99) mean the generator could not keep the schedule. */
const saturatedSendLagMs = 25

export interface LabRunOptions {
  label: string
  url: string
  /** Where the service's /metrics is (its admin listener with TOLLBOOTH_ADMIN_PORT); the scraper reads it there. */
  metricsUrl: string
  service: ServiceInfo
  /** The service's pid when the lab started it (its process tree is read from /proc). */
  pid: number | undefined
  scenario: ScenarioRef
  /** Endpoint names in report order. */
  endpointOrder: readonly string[]
  data: unknown
  load: LoadSpec
  /** Unique to the lab command, so runs of one comparison never reuse each other's fresh emails. */
  runId: string
  onSecond?: (sample: SecondSample, server: ServerSample | undefined) => void
}

/** The segment a whole-load phase runs. */
export function segmentLoadOf (load: LoadSpec): SegmentLoad {
  return load.model === 'closed'
    ? { model: 'closed', startVus: load.startVus, stages: load.stages, thinkTimeMs: load.thinkTimeMs, honourRetryAfter: load.honourRetryAfter }
    : { model: 'open', startRate: load.startRate, stages: load.stages, maxInFlight: load.maxInFlight }
}

const round = (value: number, places: number): number => Math.round(value * 10 ** places) / 10 ** places

/** The figures a comparison shows for one run, derived from what the run collected. */
export function summariseRun (run: Omit<RunResult, 'summary'>): RunSummary {
  // Seconds with load in them: the ones the schedule offered work in (the drain after the end is left out).
  const seconds = Math.max(1, run.seconds.filter((sample) => sample.offered > 0 || sample.started > 0).length)
  const achieved = run.seconds.reduce((sum, sample) => sum + sample.achieved, 0)
  const values = (pick: (sample: ServerSample) => number | null): number[] => run.server.map(pick).filter((value): value is number => value !== null)
  const max = (pick: (sample: ServerSample) => number | null): number | null => values(pick).length === 0 ? null : Math.max(...values(pick))
  const mean = (pick: (sample: ServerSample) => number | null): number | null =>
    values(pick).length === 0 ? null : round(values(pick).reduce((sum, value) => sum + value, 0) / values(pick).length, 3)
  // The service's whole process tree when the lab started it (children and cluster workers included).
  const tree = run.server.some((sample) => sample.processTreeCpuCores !== null)
  const { all } = run
  return {
    durationSeconds: seconds,
    achievedPerSecond: round(achieved / seconds, 2),
    requestsPerSecond: round(all.requests / seconds, 2),
    requests: all.requests,
    ok: all.ok,
    latency: all.latency,
    okLatency: all.okLatency,
    errors: all.errors,
    errorRate: all.requests === 0 ? 0 : round(errorTotal(all.errors) / all.requests, 4),
    healthz: run.healthz,
    eventLoopDelayP99MaxMs: max((sample) => sample.eventLoopDelayP99Ms),
    libuvCanaryMaxMs: max((sample) => sample.libuvCanaryMs),
    cpuCoresMean: mean((sample) => tree ? sample.processTreeCpuCores : sample.cpuCores),
    peakRssBytes: max((sample) => tree ? sample.processTreeRssBytes : sample.rssBytes),
  }
}

export class LabRun {
  private readonly segments: SegmentResult[] = []
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
    const { url, load } = options
    const session = await LoadSession.start({
      url,
      workers: load.workers,
      // The most requests the load can have in flight: connections to open.
      connections: load.model === 'open' ? load.maxInFlight : Math.max(1, load.startVus, ...load.stages.map((stage) => stage.target)),
      requestTimeoutMs: load.requestTimeoutMs,
      scenario: options.scenario,
      data: options.data,
      runId: options.runId,
      endpointOrder: options.endpointOrder,
      onSecond: (sample) => {
        sample.healthz = probe?.second(sample.t) ?? null
        options.onSecond?.(sample, scraper?.samples.at(-1))
      },
    })
    try {
      scraper = new MetricsScraper({ url: options.metricsUrl, runStartEpochMs: session.runStartEpochMs, pid: options.pid })
      await scraper.start()
      probe = new HealthzProbe({ url, ratePerSecond: load.healthzProbeRate, runStartEpochMs: session.runStartEpochMs, timeoutMs: load.requestTimeoutMs })
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
    const { label } = this.options
    const seconds = this.session.seconds
    // Probes that ended after their second was merged are in now.
    for (const sample of seconds) sample.healthz = this.probe.second(sample.t)
    const lastT = seconds.at(-1)?.t ?? 0

    const generator = this.generatorInfo((cpu.user + cpu.system) / 1e6 / Math.max(0.001, wallSeconds))
    const failedIterations = this.segments.reduce((sum, segment) => sum + segment.iterationErrors, 0)
    const firstError = this.segments.find((segment) => segment.firstIterationError !== null)?.firstIterationError ?? ''
    const lag = generator.sendLagMs?.p99Ms
    const warnings = [
      generator.saturated && `the load generator was saturated (busiest thread ${Math.round(generator.maxEventLoopUtilisation * 100)} % busy` +
        `${lag == null ? '' : `, arrivals sent up to ${Math.round(lag)} ms late (p99)`}): the figures may describe the lab, not the service; add --workers or lower the load`,
      failedIterations > 0 && `${failedIterations} iteration(s) threw in the scenario; the first: ${firstError}`,
      this.scraper.failedScrapes > 0 && `${this.scraper.failedScrapes} /metrics scrape(s) failed or came late; those seconds have no server signals`,
      this.probe.failures > 0 && `${this.probe.failures} /healthz probe(s) did not get a 200`,
      this.probe.skipped > 0 && `${this.probe.skipped} /healthz probe(s) were not sent because earlier ones were still waiting`,
      this.probe.error !== undefined && `the /healthz prober failed: ${this.probe.error}`,
    ].filter((warning): warning is string => warning !== false).map((warning) => `${label}: ${warning}`)

    const phased = this.segments.filter((segment) => segment.phase !== undefined)
    const collected: Omit<RunResult, 'summary'> = {
      label,
      service: this.options.service,
      startedAt: this.startedAt.toISOString(),
      durationMs: Math.round(lastT * 1000),
      seconds,
      server: this.scraper.samples.filter((sample) => sample.t <= lastT),
      endpoints: this.session.totals.toStats(this.options.endpointOrder),
      all: this.session.totals.all().toStats(),
      healthz: this.probe.summary(),
      ...(phased.length === 0 ? {} : { phases: Object.fromEntries(phased.map((segment) => [segment.phase as string, segment.all])) }),
      generator,
    }
    return { run: { ...collected, summary: summariseRun(collected) }, warnings }
  }

  private generatorInfo (cpuCores: number): GeneratorInfo {
    // The worst segment's lag: a knee's last steps are where the generator is tried hardest.
    const sendLagMs = this.segments.map((segment) => segment.sendLag).filter((lag): lag is LatencySummary => lag !== null)
      .reduce<LatencySummary | null>((worst, lag) => (worst === null || (lag.p99Ms ?? 0) > (worst.p99Ms ?? 0) ? lag : worst), null)
    const maxEventLoopUtilisation = round(this.session.maxEventLoopUtilisation(), 3)
    return {
      workers: this.session.workerCount,
      cpuCores: round(cpuCores, 3),
      maxEventLoopUtilisation,
      sendLagMs,
      saturated: maxEventLoopUtilisation > saturatedUtilisation || (sendLagMs?.p99Ms ?? 0) > saturatedSendLagMs,
    }
  }
}
