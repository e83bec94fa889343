/**
 * The report's prose, as data: the settings a reader needs to trust the figures (scenario,
 * load, service, machine) and one-line summaries of a run. Text shows them as "label: value"
 * lines, HTML as definition lists.
 */
import type { ErrorCounts, KneeResult, LabResult, LatencySummary, LoadSpec, RunResult, ServerSample } from '../result.js'
import { formatCores, formatCount, formatDuration, formatGiB, formatMiB, formatMs, formatPercent, formatRate } from './format.js'

export interface Fact {
  label: string
  value: string
}

/** "0 → 100 VUs over 10 s, 100 VUs for 20 s" (each stage ramps linearly from the previous target). */
function describeStages (load: LoadSpec): string {
  const unit = load.model === 'closed' ? ' VUs' : '/s'
  const rate = (value: number): string => formatRate(value).replace(/\.0$/, '')
  let from = load.model === 'closed' ? load.startVus : load.startRate
  return load.stages.map((stage) => {
    const text = stage.target === from
      ? `${rate(stage.target)}${unit} for ${formatDuration(stage.durationMs)}`
      : `${rate(from)} → ${rate(stage.target)}${unit} over ${formatDuration(stage.durationMs)}`
    from = stage.target
    return text
  }).join(', ')
}

function describeLoad (load: LoadSpec): Fact[] {
  const model = load.model === 'closed'
    ? `closed: virtual users loop over the scenario, think time ${formatDuration(load.thinkTimeMs)}`
    : `open: arrivals at a target rate whatever the service answers, at most ${formatCount(load.maxInFlight)} in flight (beyond: dropped)`
  return [
    { label: 'load model', value: model },
    { label: 'stages', value: describeStages(load) },
    {
      label: 'load settings',
      value: [
        `request timeout ${formatDuration(load.requestTimeoutMs)}`,
        load.healthzProbeRate > 0 ? `/healthz probed ${formatRate(load.healthzProbeRate).replace(/\.0$/, '')}/s${load.healthzProbeTimes === 'random' ? ' at random times' : ''}` : '/healthz not probed',
        `${load.workers} generator worker${load.workers === 1 ? '' : 's'}`,
        `HTTP client ${load.httpClient ?? 'undici'}`,
        load.politeAndNaive === true
          ? 'each strategy with polite clients (Retry-After honoured) and naive ones (retry at once)'
          : load.honourRetryAfter ? 'Retry-After honoured' : 'Retry-After ignored',
        `${formatCount(load.accounts)} accounts`,
        ...(load.sourceAddresses === undefined ? [] : [`users spread over ${formatCount(load.sourceAddresses)} loopback source addresses`]),
      ].join(', '),
    },
  ]
}

/** "k=v, k=v" in the service's own order. */
export function describeSettings (settings: Record<string, string>): string {
  const entries = Object.entries(settings)
  return entries.length === 0 ? '—' : entries.map(([key, value]) => `${key}=${value}`).join(', ')
}

/** Everything above the figures: what ran, against what, on what. */
export function headerFacts (result: LabResult): Fact[] {
  const { machine } = result
  const budget = machine.cpuBudget
  const only = result.runs.length === 1 ? result.runs[0] : undefined
  const service: Fact[] = only === undefined
    ? []
    : [
        { label: 'service', value: `${only.service.url}, ${only.service.startedByLab ? 'started by the lab' : 'already running'}, strategy ${only.service.strategy ?? '—'}, version ${only.service.version ?? '—'}` },
        { label: 'settings', value: describeSettings(only.service.settings) },
      ]
  return [
    { label: 'scenario', value: result.scenario.description === '' ? result.scenario.name : `${result.scenario.name}: ${result.scenario.description}` },
    { label: 'endpoints', value: result.scenario.endpoints.join(', ') },
    ...(result.scenario.phases === undefined ? [] : [{ label: 'phases', value: result.scenario.phases.join(' → ') }]),
    // A sizing sets its own load per step: its settings are the figures' own (report/sizing.ts).
    ...describeLoad(result.load).filter((fact) => result.command !== 'sizing' || fact.label === 'load settings'),
    ...service,
    { label: 'machine', value: `${machine.cpuModel}, ${machine.cores} cores, ${formatGiB(machine.memoryBytes)}${machine.schedulerAutogroups === undefined || machine.schedulerAutogroups === null ? '' : `, scheduler autogroups ${machine.schedulerAutogroups ? 'on' : 'off'}`}` },
    { label: 'CPU budget', value: `${formatCores(budget.cpus)} cores (source: ${budget.source}${budget.quota === null ? '' : `, quota ${formatCores(budget.quota)}`})` },
    { label: 'software', value: `Node ${machine.node}, ${machine.platform} ${machine.arch}, tollbooth ${machine.tollboothVersion}` },
    { label: 'created', value: result.createdAt },
    { label: 'command line', value: result.commandLine },
  ]
}

/** Non-zero causes only: "401 ×3, 503 ×20 (20 overloaded), 5 timeouts". */
export function describeErrors (errors: ErrorCounts): string {
  const parts = Object.entries(errors.byStatus)
    .filter(([, count]) => count > 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, count]) => status === '503' && errors.overloaded > 0
      ? `503 ×${formatCount(count)} (${formatCount(errors.overloaded)} overloaded, with Retry-After)`
      : `${status} ×${formatCount(count)}`)
  if (errors.timeouts > 0) parts.push(`${formatCount(errors.timeouts)} timeouts`)
  if (errors.connectionErrors > 0) parts.push(`${formatCount(errors.connectionErrors)} connection errors`)
  if (errors.other > 0) parts.push(`${formatCount(errors.other)} other`)
  return parts.length === 0 ? 'none' : parts.join(', ')
}

function describeLatency (latency: LatencySummary | null, what: string): string {
  if (latency === null || latency.count === 0) return `no ${what}`
  return `${formatCount(latency.count)} ${what}: ${latencyFigures(latency)}`
}

function latencyFigures (latency: LatencySummary): string {
  return `p50 ${formatMs(latency.p50Ms)} ms, p99 ${formatMs(latency.p99Ms)} ms, max ${formatMs(latency.maxMs)} ms`
}

/** The service's /healthz probes, and the floor beside them when it was measured. */
export function describeHealthz (run: RunResult): string[] {
  const service = describeLatency(run.healthz, 'probes')
  const floor = run.healthzFloor
  if (floor === undefined || floor === null || floor.count === 0) return [service]
  return [service, `an empty server beside it, probed alike (the machine's floor): ${latencyFigures(floor)}`]
}

/** The peak, or the sum, of a server signal over the run; null when it was never measured. */
function over (samples: ServerSample[], pick: (sample: ServerSample) => number | null, how: 'peak' | 'total'): number | null {
  const values = samples.map(pick).filter((value): value is number => value !== null)
  return values.length === 0 ? null : how === 'peak' ? Math.max(...values) : values.reduce((sum, value) => sum + value, 0)
}

/** What the service said about itself during the run. */
export function serverFacts (run: RunResult): Fact[] {
  const { summary, server } = run
  const cpuOf = run.service.startedByLab ? 'process tree' : 'process'
  return [
    { label: 'mean CPU', value: `${formatCores(summary.cpuCoresMean)} cores (${cpuOf})` },
    { label: 'event-loop delay', value: `p99 ${formatMs(summary.eventLoopDelayP99MaxMs)} ms at its worst second` },
    { label: 'libuv canary', value: `${formatMs(summary.libuvCanaryMaxMs)} ms at its slowest` },
    { label: 'peak RSS', value: `${formatMiB(summary.peakRssBytes)} MiB` },
    { label: 'hash queue', value: `peak ${formatCount(over(server, (sample) => sample.hashQueued, 'peak'))} waiting, ${formatCount(over(server, (sample) => sample.hashRunning, 'peak'))} running` },
    {
      label: 'hash rejections',
      value: `${formatCount(over(server, (sample) => sample.hashRejected, 'total'))} refused at admission, ` +
        `${formatCount(over(server, (sample) => sample.hashDeadlineExceeded, 'total'))} expired in the queue, ` +
        `${formatCount(over(server, (sample) => sample.hashCancelled, 'total'))} cancelled`,
    },
  ]
}

export function describeGenerator (run: RunResult): string {
  const { generator } = run
  const lag = generator.sendLagMs === null ? '' : `, send lag p99 ${formatMs(generator.sendLagMs.p99Ms)} ms`
  return `${generator.workers} worker${generator.workers === 1 ? '' : 's'}, ${formatCores(generator.cpuCores)} cores, ` +
    `busiest thread ${formatPercent(generator.maxEventLoopUtilisation)} event-loop utilisation${lag}`
}

/** One loud line per run whose load generator may have been the bottleneck. */
export function saturationWarnings (result: LabResult): string[] {
  return result.runs.filter((run) => run.generator.saturated).map((run) => {
    const which = result.runs.length === 1 ? '' : ` (${run.label})`
    return `LOAD GENERATOR SATURATED${which}: the generator, not the service, may have limited the load ` +
      `(${formatCores(run.generator.cpuCores)} cores, ${formatPercent(run.generator.maxEventLoopUtilisation)} event-loop utilisation); ` +
      'treat throughput and latency as lower bounds of what the service can do'
  })
}

/** "knee: 259/s (stopped because ...)". */
export function kneeLine (knee: KneeResult): string {
  const found = knee.kneePerSecond === null ? 'none, even the first step failed' : `${formatRate(knee.kneePerSecond)}/s`
  return `knee: ${found} (stopped because ${knee.stoppedBecause})`
}

export function kneeCriteriaLine (knee: KneeResult): string {
  const { criteria } = knee
  return `steps of ${formatDuration(criteria.stepDurationMs)} from ${formatRate(criteria.startRate)}/s, +${formatPercent(criteria.stepFactor)} each, ` +
    `at most ${criteria.maxSteps}; a step holds while achieved ≥ offered × ${(1 - criteria.throughputMargin).toFixed(2)}, ` +
    `p99 ≤ ${formatMs(criteria.p99LimitMs)} ms and errors ≤ ${formatPercent(criteria.errorRateLimit)}`
}
