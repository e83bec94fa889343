/**
 * One run against one service: the load generators, the /metrics scraper and the /healthz probe
 * side by side, on one clock, from second 1 to the end of the last segment; then everything
 * collected into a RunResult.
 */
import { performance } from 'node:perf_hooks'
import { defaultLoadClient } from '../http/index.js'
import type { GeneratorInfo, LatencySummary, LoadSpec, RunResult, RunSummary, SecondSample, SegmentLoad, ServerSample, ServiceInfo } from '../result.js'
import { MetricsScraper } from '../services/index.js'
import { LoadSession, type LoadSessionOptions, type SegmentResult } from './load-session.js'
import { HealthzProbe } from './probe.js'
import { startReferenceServer, type ReferenceServer } from './reference-server.js'
import { errorTotal } from './stats.js'

/** Above this mean event-loop utilisation a generator thread was the bottleneck, not the service. */
const saturatedUtilisation = 0.9
/** Arrivals sent this late (p99) mean the generator could not keep the schedule. */
const saturatedSendLagMs = 25

export interface LabRunOptions extends Pick<LoadSessionOptions, 'url' | 'scenario' | 'data' | 'runId' | 'endpointOrder'> {
  label: string
  /** Where the service's /metrics is (its admin listener with TOLLBOOTH_ADMIN_PORT). */
  metricsUrl: string
  service: ServiceInfo
  /** The service's pid when the lab started it (its process tree is read from /proc). */
  pid: number | undefined
  load: LoadSpec
  onSecond?: (sample: SecondSample, server: ServerSample | undefined) => void
  /** Aborting stops the load at once; the run so far is still collected, with a warning. */
  signal?: AbortSignal | undefined
}

/**
 * A segment as measured beside the load: the /healthz probes that ended in its seconds, the
 * service's mean CPU in them (its process tree when the lab started it; null: not scraped), and
 * the lab process's own CPU (generators, probe, scraper) while it ran, in cores.
 */
interface MeasuredSegment extends SegmentResult {
  healthz: LatencySummary | null
  serviceCpuCores: number | null
  labCpuCores: number
}

/** Runs a segment (a phase, a knee step) on every generator; resolves when its requests have all ended. */
export type RunSegment = (phase: string | undefined, load: SegmentLoad) => Promise<MeasuredSegment>

const round = (value: number, places: number): number => Math.round(value * 10 ** places) / 10 ** places

/**
 * The schedule's seconds, from the first it offered work in to the last: not the drain after the
 * end, even when an arrival of the last second was sent a moment late (a start in the drain made
 * one run of four 26 seconds long where the schedule was 25, and cut its rates by 4 %).
 */
export function scheduledSeconds (seconds: ReadonlyArray<Pick<SecondSample, 't' | 'offered'>>): number {
  const offered = seconds.filter((sample) => sample.offered > 0).map((sample) => sample.t)
  return offered.length === 0 ? 1 : Math.max(...offered) - Math.min(...offered) + 1
}

/** What the run's finished segments did against their schedules. */
interface ScheduleTally {
  /** Successful iterations that ended in a segment's drain, after its schedule. */
  achievedAfterEnd: number
  /** The segments' schedules, summed (s); undefined for an interrupted run. */
  scheduledSeconds: number | undefined
}

/**
 * The figures a comparison shows for one run, derived from what the run collected. Its rates
 * are per second of its segments' schedules (the drains between and after them not counted; an
 * interrupted run: from the first second that offered work to the last). The achieved rate
 * counts the successful iterations that ended within a schedule; those that ended in a drain are
 * kept apart (`achievedAfterEnd`): the work they stand for was mostly done after the schedule,
 * so counting them against its seconds credits a service by what it had in flight at the end. A
 * hundred logins queued behind four threads added 3.3 logins/s to a 30 s storm, fifty-six
 * queued within a 2 s deadline 1.9/s.
 */
function summariseRun (run: Omit<RunResult, 'summary'>, schedule: ScheduleTally): RunSummary {
  const seconds = schedule.scheduledSeconds ?? scheduledSeconds(run.seconds)
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
    achievedPerSecond: round((achieved - schedule.achievedAfterEnd) / seconds, 2),
    achievedAfterEnd: schedule.achievedAfterEnd,
    requestsPerSecond: round(all.requests / seconds, 2),
    ...all,
    errorRate: all.requests === 0 ? 0 : round(errorTotal(all.errors) / all.requests, 4),
    healthz: run.healthz,
    healthzFloor: run.healthzFloor ?? null,
    eventLoopDelayP99MaxMs: max((sample) => sample.eventLoopDelayP99Ms),
    libuvCanaryMaxMs: max((sample) => sample.libuvCanaryMs),
    cpuCoresMean: mean((sample) => tree ? sample.processTreeCpuCores : sample.cpuCores),
    peakRssBytes: max((sample) => tree ? sample.processTreeRssBytes : sample.rssBytes),
  }
}

function generatorInfo (session: LoadSession, segments: SegmentResult[], cpuCores: number): GeneratorInfo {
  // The worst segment's lag: a knee's last steps are where the generator is tried hardest.
  const sendLagMs = segments.map((segment) => segment.sendLag).filter((lag): lag is LatencySummary => lag !== null)
    .reduce<LatencySummary | null>((worst, lag) => (worst === null || (lag.p99Ms ?? 0) > (worst.p99Ms ?? 0) ? lag : worst), null)
  const maxEventLoopUtilisation = round(session.maxEventLoopUtilisation(), 3)
  return {
    workers: session.workerCount,
    cpuCores: round(cpuCores, 3),
    maxEventLoopUtilisation,
    sendLagMs,
    saturated: maxEventLoopUtilisation > saturatedUtilisation || (sendLagMs?.p99Ms ?? 0) > saturatedSendLagMs,
  }
}

/** Starts the run, hands `segments` a way to run its segments, then stops everything and collects the run. */
export async function runLoad (options: LabRunOptions, segments: (segment: RunSegment) => Promise<void>): Promise<{ run: RunResult, warnings: string[] }> {
  const { label, metricsUrl, service, pid, load, signal, onSecond, ...common } = options
  const startedAt = new Date().toISOString()
  const cpuBefore = process.cpuUsage()
  const wallBefore = performance.now()
  let scraper: MetricsScraper | undefined
  let probe: HealthzProbe | undefined
  let floorServer: ReferenceServer | undefined
  let floorError: string | undefined
  const session = await LoadSession.start({
    ...common,
    workers: load.workers,
    // The most requests the load can have in flight: connections to open.
    connections: load.model === 'open' ? load.maxInFlight : Math.max(1, load.startVus, ...load.stages.map((stage) => stage.target)),
    requestTimeoutMs: load.requestTimeoutMs,
    ...(load.sourceAddresses === undefined ? {} : { sourceAddresses: load.sourceAddresses }),
    httpClient: load.httpClient ?? defaultLoadClient,
    onSecond: (sample) => {
      probe?.fill(sample)
      onSecond?.(sample, scraper?.samples.at(-1))
    },
  })
  try {
    scraper = new MetricsScraper({ url: metricsUrl, runStartEpochMs: session.runStartEpochMs, pid })
    await scraper.start()
    // The floor is a measurement beside the run: without it the run goes on, and says so.
    if (load.healthzProbeRate > 0) floorServer = await startReferenceServer().catch((err: unknown) => { floorError = (err as Error).message; return undefined })
    probe = new HealthzProbe({ url: common.url, floorUrl: floorServer?.url, ratePerSecond: load.healthzProbeRate, runStartEpochMs: session.runStartEpochMs, timeoutMs: load.requestTimeoutMs })
    probe.start()
  } catch (err) {
    try {
      await session.close(true)
      await scraper?.stop()
    } finally {
      await floorServer?.close()
    }
    throw err
  }
  const stop = async (abort: boolean): Promise<number> => {
    await session.close(abort)
    const wallSeconds = (performance.now() - wallBefore) / 1000
    const cpu = process.cpuUsage(cpuBefore)
    await Promise.all([probe?.stop().then(async () => { await floorServer?.close() }), scraper?.stop()])
    return (cpu.user + cpu.system) / 1e6 / Math.max(0.001, wallSeconds)
  }

  const done: SegmentResult[] = []
  let onAbort = (): void => {}
  const aborted = new Promise<void>((resolve) => { onAbort = resolve })
  if (signal?.aborted === true) onAbort()
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    await Promise.race([segments(async (phase, segmentLoad) => {
      const cpuAtStart = process.cpuUsage()
      const wallAtStart = performance.now()
      const result = await session.runSegment(phase, segmentLoad)
      done.push(result)
      const cpu = process.cpuUsage(cpuAtStart)
      await scraper?.reached(result.endT)
      // A scrape that came late leaves its second empty: a short step then takes the next second's.
      const coresIn = (lastT: number): number[] => (scraper?.samples ?? []).filter((sample) => sample.t > result.startT && sample.t <= lastT)
        .map((sample) => sample.processTreeCpuCores ?? sample.cpuCores).filter((value): value is number => value !== null)
      const inStep = coresIn(result.endT)
      const cores = inStep.length > 0 ? inStep : coresIn(result.endT + 1)
      return {
        ...result,
        healthz: probe?.summaryBetween(result.startT + 1, result.endT) ?? null,
        serviceCpuCores: cores.length === 0 ? null : round(cores.reduce((sum, value) => sum + value, 0) / cores.length, 3),
        labCpuCores: round((cpu.user + cpu.system) / 1e6 / Math.max(0.001, (performance.now() - wallAtStart) / 1000), 3),
      }
    }), aborted])
  } catch (err) {
    // A generator that failed: stop the others, the scraper and the probe before reporting it.
    await stop(true).catch(() => {})
    throw err
  } finally {
    signal?.removeEventListener('abort', onAbort)
  }
  const interrupted = signal?.aborted === true
  const generator = generatorInfo(session, done, await stop(interrupted))
  const seconds = session.seconds
  // Probes that ended after their second was merged are in now.
  for (const sample of seconds) probe.fill(sample)
  const lastT = seconds.at(-1)?.t ?? 0

  const failedIterations = done.reduce((sum, segment) => sum + segment.iterationErrors, 0)
  const firstError = done.find((segment) => segment.firstIterationError !== null)?.firstIterationError ?? ''
  const lag = generator.sendLagMs?.p99Ms
  const warnings = [
    generator.saturated && `the load generator was saturated (busiest thread ${Math.round(generator.maxEventLoopUtilisation * 100)} % busy` +
      `${lag == null ? '' : `, arrivals sent up to ${Math.round(lag)} ms late (p99)`}): the figures may describe the lab, not the service; add --workers or lower the load`,
    failedIterations > 0 && `${failedIterations} iteration(s) threw in the scenario; the first: ${firstError}`,
    scraper.failedScrapes > 0 && `${scraper.failedScrapes} /metrics scrape(s) failed or came late; those seconds have no server signals`,
    probe.failures > 0 && `${probe.failures} /healthz probe(s) did not get a 200`,
    probe.skipped > 0 && `${probe.skipped} /healthz probe(s) were not sent because earlier ones were still waiting`,
    probe.error !== undefined && `the /healthz prober failed: ${probe.error}`,
    floorError !== undefined && `no /healthz floor in this run: ${floorError}`,
    probe.floorFailures > 0 && `${probe.floorFailures} probe(s) of the empty reference server got no answer or were not sent: its floor is not whole`,
    interrupted && 'interrupted; the figures cover the run up to the interruption',
  ].filter((warning): warning is string => warning !== false).map((warning) => `${label}: ${warning}`)

  const phased = done.filter((segment) => segment.phase !== undefined)
  const collected: Omit<RunResult, 'summary'> = {
    label,
    service,
    startedAt,
    durationMs: Math.round(lastT * 1000),
    seconds,
    server: scraper.samples.filter((sample) => sample.t <= lastT),
    endpoints: session.totals.toStats(common.endpointOrder),
    all: session.totals.all().toStats(),
    healthz: probe.summary(),
    healthzFloor: probe.floorSummary(),
    ...(phased.length === 0 ? {} : { phases: Object.fromEntries(phased.map((segment) => [segment.phase as string, segment.all])) }),
    generator,
  }
  // An interrupted segment never reported its counts: what it achieved counts as in its schedule.
  const schedule: ScheduleTally = {
    achievedAfterEnd: done.reduce((sum, segment) => sum + segment.achieved - segment.achievedInWindow, 0),
    scheduledSeconds: interrupted ? undefined : done.reduce((sum, segment) => sum + segment.durationMs, 0) / 1000,
  }
  return { run: { ...collected, summary: summariseRun(collected, schedule) }, warnings }
}
