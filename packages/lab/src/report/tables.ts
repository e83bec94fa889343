/**
 * Every table of the reports as data (headers and already formatted cells), built once from a
 * LabResult; text.ts and html.ts only choose how to draw them. Each column is declared once:
 * its header, its alignment and how its cell is read from a row.
 */
import { serviceCpuMsPerAchieved, type EndpointStats, type KneeResult, type KneeStep, type LabResult, type percentileFields, type ReferenceFigures, type RunResult } from '../result.js'
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

export interface Column<Row> extends TableColumn {
  cell: (row: Row) => string
}

export function right<Row> (header: string, cell: (row: Row) => string, description?: string): Column<Row> {
  return { header, align: 'right', cell, ...(description === undefined ? {} : { description }) }
}

export function left<Row> (header: string, cell: (row: Row) => string, wrapAtChars?: number): Column<Row> {
  return { header, align: 'left', cell, ...(wrapAtChars === undefined ? {} : { wrapAtChars }) }
}

type Percentile = (typeof percentileFields)[number]

/** "p50 ms", "p99 ms" ... columns of a latency (or the articles' figures) picked from the row. */
export function msColumns<Row> (pick: (row: Row) => Partial<Record<Percentile, number | null>>, names: readonly Percentile[]): Array<Column<Row>> {
  return names.map((name) => right(`${name.slice(0, -2)} ms`, (row) => formatMs(pick(row)[name])))
}

/** The table of `rows`; `emphasise` picks the rows HTML highlights. */
export function table<Row> (columns: Array<Column<Row>>, rows: readonly Row[], emphasise?: (row: Row) => boolean, totalRow?: number): Table {
  const emphasisedRows = emphasise === undefined ? [] : rows.flatMap((row, index) => emphasise(row) ? [index] : [])
  return {
    columns: columns.map(({ cell, ...column }) => column),
    rows: rows.map((row) => columns.map((column) => column.cell(row))),
    ...(emphasisedRows.length === 0 ? {} : { emphasisedRows }),
    ...(totalRow === undefined ? {} : { totalRow }),
  }
}

/** The strategy whose row the HTML comparison emphasises: this project's own design. */
const ownStrategyLabel = 'tollbooth'

/** An endpoint's (or a phase's) figures, with the seconds its rate is over. */
interface Named { name: string, stats: EndpointStats, seconds: number }

const statsColumns = (first: string): Array<Column<Named>> => [
  left(first, (row) => row.name),
  right('requests', (row) => formatCount(row.stats.requests)),
  right('ok', (row) => formatCount(row.stats.ok)),
  right('errors', (row) => formatCount(row.stats.requests - row.stats.ok), 'requests without a 2xx: non-2xx responses, timeouts, connection errors'),
  right('req/s', (row) => formatRate(row.seconds > 0 ? row.stats.requests / row.seconds : null)),
  ...msColumns((row: Named) => row.stats.latency, ['p50Ms', 'p90Ms', 'p95Ms', 'p99Ms', 'maxMs']),
  right('ok p99', (row) => formatMs(row.stats.okLatency.p99Ms), 'p99 of the 2xx responses alone, ms'),
  right('503 p99', (row) => formatMs(row.stats.refusedLatency?.p99Ms), 'p99 of the 503s with Retry-After alone, ms: how fast a refusal came'),
]

/** One row per endpoint, in the result's order (the scenario's first: runner.ts writes them so), then the whole run. */
export function endpointTable (run: RunResult): Table {
  const seconds = run.summary.durationSeconds
  // With phases (auth-path) each endpoint runs in its own phase: its rate is over the seconds it had requests in.
  const secondsOf = (name: string): number => run.phases === undefined
    ? seconds
    : Math.max(1, run.seconds.filter((sample) => (sample.byEndpoint[name]?.requests ?? 0) > 0).length)
  const rows = Object.entries(run.endpoints).map(([name, stats]) => ({ name, stats, seconds: secondsOf(name) }))
  return table(statsColumns('endpoint'), [...rows, { name: 'all endpoints', stats: run.all, seconds }], undefined, rows.length)
}

/** Sequential phases (auth-path), in the order they ran: whole-phase figures of every request. */
export function phaseTable (run: RunResult): Table | null {
  if (run.phases === undefined) return null
  // Phases run in turn, each for its own share of the run.
  const seconds = (name: string): number => run.seconds.filter((sample) => sample.phase === name).length
  return table(statsColumns('phase'), Object.entries(run.phases).map(([name, stats]) => ({ name, stats, seconds: seconds(name) })))
}

const comparisonColumns = (first: string): Array<Column<RunResult>> => [
  left(first, (run) => run.label),
  right('achieved/s', (run) => formatRate(run.summary.achievedPerSecond), 'successful iterations per second of the schedule (the drain after it not counted)'),
  right('drain', (run) => formatCount(run.summary.achievedAfterEnd), 'successful iterations that ended after the schedule: what was in flight at its end, not in achieved/s'),
  ...msColumns((run: RunResult) => run.summary.latency, ['p50Ms', 'p95Ms', 'p99Ms']),
  right('ok p95', (run) => formatMs(run.summary.okLatency.p95Ms), 'p95 of the 2xx responses alone, ms: what a user who got in waited'),
  right('errors', (run) => formatPercent(run.summary.errorRate), 'share of requests without a 2xx'),
  right('timeouts', (run) => formatCount(run.summary.errors.timeouts), 'requests with no response within the request timeout'),
  right('503s', (run) => formatCount(run.summary.errors.overloaded), 'refused at once with Retry-After (overloaded, by design)'),
  right('503 p99', (run) => formatMs(run.summary.refusedLatency?.p99Ms), 'p99 of the 503s with Retry-After alone, ms: how fast a refusal came'),
  right('healthz p99', (run) => formatMs(run.summary.healthz?.p99Ms), '/healthz probes during the load, p99 ms'),
  right('floor p99', (run) => formatMs(run.summary.healthzFloor?.p99Ms), 'the same probes of an empty server beside the service in the same run, p99 ms: the machine\'s floor under healthz p99'),
  right('loop p99', (run) => formatMs(run.summary.eventLoopDelayP99MaxMs), 'event-loop delay p99 of the worst second, ms (the sampling interval taken out)'),
  right('libuv max', (run) => formatMs(run.summary.libuvCanaryMaxMs), "the libuv-pool canary's slowest answer, ms"),
  right('cores', (run) => formatCores(run.summary.cpuCoresMean), 'mean CPU cores of the service during the load (process tree when the lab started it)'),
  right('RSS MiB', (run) => formatMiB(run.summary.peakRssBytes), 'peak resident memory of the service'),
]

/** THE comparison: one row per strategy (or scenario), in the order they ran. */
export function comparisonTable (result: LabResult): Table {
  return table(comparisonColumns(result.scenarios === undefined ? 'strategy' : 'run'), result.runs, (run) => run.label === ownStrategyLabel)
}

/** Compare: what each run's successes cost in CPU, the service's and the load generator's (they share the machine). */
export function cpuTable (result: LabResult): Table {
  return table<RunResult>([
    left(result.scenarios === undefined ? 'strategy' : 'run', (run) => run.label),
    right('achieved/s', (run) => formatRate(run.summary.achievedPerSecond), 'successful iterations per second of the schedule'),
    right('service cores', (run) => formatCores(run.summary.cpuCoresMean), 'mean CPU cores of the service during the load (process tree when the lab started it)'),
    right('CPU ms/ok', (run) => formatMs(serviceCpuMsPerAchieved(run.summary)), 'the service\'s CPU per successful iteration (a login, in the storms), ms: its cores ÷ achieved/s'),
    right('lab cores', (run) => formatCores(run.generator.cpuCores), 'mean CPU cores of the load generator, on the same machine'),
    right('lab loop max', (run) => formatPercent(run.generator.maxEventLoopUtilisation), 'the busiest generator thread\'s event-loop utilisation: near 100 %, the generator, not the service, set the pace'),
  ], result.runs)
}

/** The articles' figures in the order of our runs whose setup they match, then any unmatched. */
function orderedReferences (result: LabResult): ReferenceFigures[] {
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

const referenceFigureColumns: Array<Column<ReferenceFigures>> = [
  left('our strategy', (reference) => reference.strategy),
  right('req/s', (reference) => formatRate(reference.requestsPerSecond)),
  ...msColumns((reference: ReferenceFigures) => reference, ['meanMs', 'p50Ms', 'p95Ms', 'p99Ms']),
  right('errors', (reference) => formatPercent(reference.errorRate)),
  right('knee/s', (reference) => formatRate(reference.kneePerSecond)),
]

/**
 * `wide` (HTML): setup and note in columns of their own; `narrow` (terminal): one
 * wrapped column, so lines stay short.
 */
export function referenceTable (result: LabResult, layout: 'wide' | 'narrow'): Table {
  const prose: Array<Column<ReferenceFigures>> = layout === 'wide'
    ? [left('source', (reference) => reference.source, 24), left('their setup', (reference) => reference.setup, 40), left('note', (reference) => reference.note ?? '', 40)]
    : [
        left('source', (reference) => reference.source, 28),
        left('their setup; note', (reference) => reference.note === undefined ? reference.setup : `${reference.setup}; ${reference.note}`, 44),
      ]
  return table([...referenceFigureColumns, ...prose], orderedReferences(result))
}

export function kneeTable (knee: KneeResult): Table {
  return table<KneeStep>([
    right('step', (step) => String(step.index + 1)),
    right('offered/s', (step) => formatRate(step.offeredPerSecond)),
    right('achieved/s', (step) => formatRate(step.achievedPerSecond)),
    ...msColumns((step: KneeStep) => step.latency, ['p50Ms', 'p95Ms', 'p99Ms']),
    right('errors', (step) => formatPercent(step.errorRate)),
    right('dropped', (step) => formatCount(step.dropped)),
    left('result', (step) => step.held ? 'held' : `failed: ${step.failedBecause.join('; ')}`, 56),
  ], knee.steps, (step) => step.held && step.offeredPerSecond === knee.kneePerSecond)
}

/** Compare: which service each strategy ran as, and with what settings. */
export function serviceTable (result: LabResult): Table {
  return table<RunResult>([
    left('strategy', (run) => run.label),
    left('url', (run) => run.service.url),
    left('started by', (run) => run.service.startedByLab ? 'the lab' : 'someone else'),
    left('version', (run) => run.service.version ?? '—'),
    left('settings', (run) => describeSettings(run.service.settings), 70),
  ], result.runs)
}
