/**
 * Every table of the reports as data (headers and already formatted cells), built once from a
 * LabResult; text.ts and html.ts only choose how to draw them.
 */
import type { EndpointStats, KneeResult, LabResult, ReferenceFigures, RunResult } from '../result.js'
import { describeSettings } from './describe.js'
import { formatCores, formatCount, formatMiB, formatMs, formatPercent, formatRate } from './format.js'

export interface TableColumn {
  header: string
  align: 'left' | 'right'
  /** A longer explanation: the HTML header's tooltip and the legend under text tables. */
  description?: string
  /** Prose: plain text wraps cells longer than this onto continuation lines; HTML lets them wrap. */
  wrapAtChars?: number
}

export interface Table {
  columns: TableColumn[]
  rows: string[][]
  /** Rows to emphasise (HTML only), by index. */
  emphasisedRows?: number[]
  /** A row that sums the others (drawn apart), by index. */
  totalRow?: number
}

const right = (header: string, description?: string): TableColumn => ({ header, align: 'right', ...(description === undefined ? {} : { description }) })
const left = (header: string, wrapAtChars?: number): TableColumn => ({ header, align: 'left', ...(wrapAtChars === undefined ? {} : { wrapAtChars }) })

/** The strategy whose row the HTML comparison emphasises: this project's own design. */
export const ownStrategyLabel = 'tollbooth'

const statsColumns: TableColumn[] = [
  right('requests'), right('ok'), right('errors', 'requests without a 2xx: non-2xx responses, timeouts, connection errors'), right('req/s'),
  right('p50 ms'), right('p90 ms'), right('p95 ms'), right('p99 ms'), right('max ms'),
]

function statsCells (stats: EndpointStats, durationSeconds: number): string[] {
  const { latency } = stats
  return [
    formatCount(stats.requests), formatCount(stats.ok), formatCount(stats.requests - stats.ok),
    formatRate(durationSeconds > 0 ? stats.requests / durationSeconds : null),
    formatMs(latency.p50Ms), formatMs(latency.p90Ms), formatMs(latency.p95Ms), formatMs(latency.p99Ms), formatMs(latency.maxMs),
  ]
}

/** The names `order` gives first, in its order, then any other the record has. */
function ordered (order: readonly string[], record: Record<string, unknown>): string[] {
  const named = order.filter((name) => record[name] !== undefined)
  return [...named, ...Object.keys(record).filter((name) => !named.includes(name))]
}

/** The scenario's endpoints first, in its order, then any the run saw that the scenario did not name. */
export function orderedEndpointNames (result: LabResult, run: RunResult): string[] {
  return ordered(result.scenario.endpoints, run.endpoints)
}

/** One row per endpoint, then the whole run. */
export function endpointTable (result: LabResult, run: RunResult): Table {
  const seconds = run.summary.durationSeconds
  // With phases (auth-path) each endpoint runs in its own phase: its rate is over the seconds it had requests in.
  const secondsOf = (name: string): number => run.phases === undefined
    ? seconds
    : Math.max(1, run.seconds.filter((sample) => (sample.byEndpoint[name]?.requests ?? 0) > 0).length)
  const rows = orderedEndpointNames(result, run).map((name) => [name, ...statsCells(run.endpoints[name] as EndpointStats, secondsOf(name))])
  return {
    columns: [left('endpoint'), ...statsColumns],
    rows: [...rows, ['all endpoints', ...statsCells(run.all, seconds)]],
    totalRow: rows.length,
  }
}

/** Sequential phases (auth-path): whole-phase figures of every request. */
export function phaseTable (result: LabResult, run: RunResult): Table | null {
  if (run.phases === undefined) return null
  const phases = run.phases
  // Phases run in turn, each for its own share of the run.
  const seconds = (name: string): number => run.seconds.filter((sample) => sample.phase === name).length
  return {
    columns: [left('phase'), ...statsColumns],
    rows: ordered(result.scenario.phases ?? [], phases).map((name) => [name, ...statsCells(phases[name] as EndpointStats, seconds(name))]),
  }
}

/** THE comparison: one row per strategy, in the order they ran. */
export function comparisonTable (result: LabResult): Table {
  return {
    columns: [
      left('strategy'),
      right('achieved/s', 'successful iterations per second'),
      right('p50 ms'), right('p95 ms'), right('p99 ms'),
      right('ok p95', 'p95 of the 2xx responses alone, ms: what a user who got in waited'),
      right('errors', 'share of requests without a 2xx'),
      right('timeouts', 'requests with no response within the request timeout'),
      right('503s', 'refused at once with Retry-After (overloaded, by design)'),
      right('healthz p99', '/healthz probes during the load, p99 ms'),
      right('healthz max', '/healthz probes during the load, max ms'),
      right('loop p99', 'event-loop delay p99 of the worst second, ms'),
      right('libuv max', "the libuv-pool canary's slowest answer, ms"),
      right('CPU cores', 'mean CPU of the service during the load (process tree when the lab started it)'),
      right('RSS MiB', 'peak resident memory of the service'),
    ],
    rows: result.runs.map((run) => {
      const { summary } = run
      return [
        run.label,
        formatRate(summary.achievedPerSecond),
        formatMs(summary.latency.p50Ms), formatMs(summary.latency.p95Ms), formatMs(summary.latency.p99Ms),
        formatMs(summary.okLatency.p95Ms),
        formatPercent(summary.errorRate),
        formatCount(summary.errors.timeouts),
        formatCount(summary.errors.overloaded),
        formatMs(summary.healthz?.p99Ms), formatMs(summary.healthz?.maxMs),
        formatMs(summary.eventLoopDelayP99MaxMs),
        formatMs(summary.libuvCanaryMaxMs),
        formatCores(summary.cpuCoresMean),
        formatMiB(summary.peakRssBytes),
      ]
    }),
    emphasisedRows: result.runs.flatMap((run, index) => run.label === ownStrategyLabel ? [index] : []),
  }
}

/** The articles' figures in the order of our runs whose setup they match, then any unmatched. */
export function orderedReferences (result: LabResult): ReferenceFigures[] {
  const position = (reference: ReferenceFigures): number => {
    const index = result.runs.findIndex((run) => run.label === reference.strategy || run.service.strategy === reference.strategy)
    return index === -1 ? result.runs.length : index
  }
  return result.references
    .map((reference, index) => ({ reference, index }))
    .sort((a, b) => position(a.reference) - position(b.reference) || a.index - b.index)
    .map(({ reference }) => reference)
}

/** The title every rendering gives the references: they are never our measurements. */
export const referencesTitle = 'Their figures (from the articles), not measured here'

/**
 * `wide` (HTML): setup and note in columns of their own; `narrow` (terminal): one
 * wrapped column, so lines stay short.
 */
export function referenceTable (result: LabResult, layout: 'wide' | 'narrow'): Table {
  const figures = (reference: ReferenceFigures): string[] => [
    formatRate(reference.requestsPerSecond), formatMs(reference.meanMs), formatMs(reference.p50Ms),
    formatMs(reference.p95Ms), formatMs(reference.p99Ms), formatPercent(reference.errorRate), formatRate(reference.kneePerSecond),
  ]
  const figureColumns = [right('req/s'), right('mean ms'), right('p50 ms'), right('p95 ms'), right('p99 ms'), right('errors'), right('knee/s')]
  const references = orderedReferences(result)
  if (layout === 'wide') {
    return {
      columns: [left('our strategy'), ...figureColumns, left('source', 24), left('their setup', 40), left('note', 40)],
      rows: references.map((reference) => [reference.strategy, ...figures(reference), reference.source, reference.setup, reference.note ?? '']),
    }
  }
  return {
    columns: [left('our strategy'), ...figureColumns, left('source', 28), left('their setup; note', 44)],
    rows: references.map((reference) => [
      reference.strategy, ...figures(reference), reference.source,
      reference.note === undefined ? reference.setup : `${reference.setup}; ${reference.note}`,
    ]),
  }
}

/** The step table of a knee search. */
export function kneeTable (knee: KneeResult): Table {
  return {
    columns: [
      right('step'), right('offered/s'), right('achieved/s'), right('p50 ms'), right('p95 ms'), right('p99 ms'),
      right('errors'), right('dropped'), left('result', 56),
    ],
    rows: knee.steps.map((step) => [
      String(step.index + 1), formatRate(step.offeredPerSecond), formatRate(step.achievedPerSecond),
      formatMs(step.latency.p50Ms), formatMs(step.latency.p95Ms), formatMs(step.latency.p99Ms),
      formatPercent(step.errorRate), formatCount(step.dropped),
      step.held ? 'held' : `failed: ${step.failedBecause.join('; ')}`,
    ]),
    emphasisedRows: knee.steps.flatMap((step, index) => step.held && step.offeredPerSecond === knee.kneePerSecond ? [index] : []),
  }
}

/** Compare: which service each strategy ran as, and with what settings. */
export function serviceTable (result: LabResult): Table {
  return {
    columns: [left('strategy'), left('url'), left('started by'), left('version'), left('settings', 70)],
    rows: result.runs.map((run) => [
      run.label, run.service.url, run.service.startedByLab ? 'the lab' : 'someone else',
      run.service.version ?? '—', describeSettings(run.service.settings),
    ]),
  }
}
