/**
 * The result as CSV files for spreadsheets: RFC 4180 (CRLF line ends, quoted fields where
 * needed, quotes doubled), a header row always, an empty cell for an unmeasured value.
 * Numbers are written as measured, unrounded.
 */
import type { EndpointStats, ErrorCounts, KneeStep, LabResult, LatencySummary, ReferenceFigures, RunResult, SecondSample, ServerSample } from '../result.js'
import { orderedEndpointNames } from './tables.js'

type CsvValue = string | number | boolean | null | undefined

/** A column: its header and how to read its cell from a row. */
type CsvColumn<Row> = readonly [header: string, cell: (row: Row) => CsvValue]

export function csvField (value: CsvValue): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : ''
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value
}

function csv<Row> (columns: ReadonlyArray<CsvColumn<Row>>, rows: Row[]): string {
  const lines = [columns.map(([header]) => csvField(header)), ...rows.map((row) => columns.map(([, cell]) => csvField(cell(row))))]
  return lines.map((cells) => `${cells.join(',')}\r\n`).join('')
}

/** `<prefix>Count, <prefix>MeanMs ... <prefix>MaxMs` of a latency summary that may be missing. */
function latencyColumns<Row> (prefix: string, pick: (row: Row) => LatencySummary | null | undefined): Array<CsvColumn<Row>> {
  const name = (field: string): string => prefix === '' ? field.charAt(0).toLowerCase() + field.slice(1) : prefix + field
  return [
    [name('Count'), (row) => pick(row)?.count],
    [name('MeanMs'), (row) => pick(row)?.meanMs],
    [name('P50Ms'), (row) => pick(row)?.p50Ms],
    [name('P90Ms'), (row) => pick(row)?.p90Ms],
    [name('P95Ms'), (row) => pick(row)?.p95Ms],
    [name('P99Ms'), (row) => pick(row)?.p99Ms],
    [name('MaxMs'), (row) => pick(row)?.maxMs],
  ]
}

/** "401=3 503=20": non-2xx responses by status in one cell. */
function byStatusCell (errors: ErrorCounts): string {
  return Object.entries(errors.byStatus).sort(([a], [b]) => a.localeCompare(b)).map(([status, count]) => `${status}=${count}`).join(' ')
}

function errorColumns<Row> (pick: (row: Row) => ErrorCounts): Array<CsvColumn<Row>> {
  return [
    ['overloaded', (row) => pick(row).overloaded],
    ['timeouts', (row) => pick(row).timeouts],
    ['connectionErrors', (row) => pick(row).connectionErrors],
    ['otherErrors', (row) => pick(row).other],
    ['byStatus', (row) => byStatusCell(pick(row))],
  ]
}

interface Labelled<Item> { run: string, item: Item }

function perRun<Item> (result: LabResult, items: (run: RunResult) => Item[]): Array<Labelled<Item>> {
  return result.runs.flatMap((run) => items(run).map((item) => ({ run: run.label, item })))
}

const secondColumns: ReadonlyArray<CsvColumn<Labelled<SecondSample>>> = [
  ['run', (row) => row.run],
  ['t', (row) => row.item.t],
  ['phase', (row) => row.item.phase],
  ['offered', (row) => row.item.offered],
  ['started', (row) => row.item.started],
  ['achieved', (row) => row.item.achieved],
  ['dropped', (row) => row.item.dropped],
  ['inFlight', (row) => row.item.inFlight],
  ['vus', (row) => row.item.vus],
  ['requests', (row) => row.item.all.requests],
  ['ok', (row) => row.item.all.ok],
  ...latencyColumns<Labelled<SecondSample>>('', (row) => row.item.all.latency),
  ['timeouts', (row) => row.item.all.errors.timeouts],
  ['overloaded', (row) => row.item.all.errors.overloaded],
  ['connectionErrors', (row) => row.item.all.errors.connectionErrors],
  ['healthzP99Ms', (row) => row.item.healthz?.p99Ms],
]

/** Every ServerSample field, in the contract's order: a Record so that a field added to the contract breaks the build here. */
const serverFieldSet: Record<keyof ServerSample, true> = {
  t: true,
  cpuCores: true,
  processTreeCpuCores: true,
  rssBytes: true,
  processTreeRssBytes: true,
  eventLoopDelayP99Ms: true,
  eventLoopDelayMaxMs: true,
  libuvCanaryMs: true,
  hashQueued: true,
  hashRunning: true,
  hashWaitMeanMs: true,
  hashRejected: true,
  hashDeadlineExceeded: true,
  hashCancelled: true,
}
const serverFields = Object.keys(serverFieldSet) as Array<keyof ServerSample>

const serverColumns: ReadonlyArray<CsvColumn<Labelled<ServerSample>>> = [
  ['run', (row) => row.run],
  ...serverFields.map((field): CsvColumn<Labelled<ServerSample>> => [field, (row) => row.item[field]]),
]

const endpointColumns: ReadonlyArray<CsvColumn<Labelled<{ endpoint: string, stats: EndpointStats }>>> = [
  ['run', (row) => row.run],
  ['endpoint', (row) => row.item.endpoint],
  ['requests', (row) => row.item.stats.requests],
  ['ok', (row) => row.item.stats.ok],
  ...latencyColumns<Labelled<{ endpoint: string, stats: EndpointStats }>>('latency', (row) => row.item.stats.latency),
  ...latencyColumns<Labelled<{ endpoint: string, stats: EndpointStats }>>('okLatency', (row) => row.item.stats.okLatency),
  ...errorColumns<Labelled<{ endpoint: string, stats: EndpointStats }>>((row) => row.item.stats.errors),
]

const kneeColumns: ReadonlyArray<CsvColumn<KneeStep>> = [
  ['step', (step) => step.index + 1],
  ['offeredPerSecond', (step) => step.offeredPerSecond],
  ['achievedPerSecond', (step) => step.achievedPerSecond],
  ...latencyColumns<KneeStep>('latency', (step) => step.latency),
  ['errorRate', (step) => step.errorRate],
  ['dropped', (step) => step.dropped],
  ['startT', (step) => step.startT],
  ['endT', (step) => step.endT],
  ['held', (step) => step.held],
  ['failedBecause', (step) => step.failedBecause.join('; ')],
]

const comparisonColumns: ReadonlyArray<CsvColumn<RunResult>> = [
  ['run', (run) => run.label],
  ['strategy', (run) => run.service.strategy],
  ['url', (run) => run.service.url],
  ['startedByLab', (run) => run.service.startedByLab],
  ['durationSeconds', (run) => run.summary.durationSeconds],
  ['achievedPerSecond', (run) => run.summary.achievedPerSecond],
  ['requestsPerSecond', (run) => run.summary.requestsPerSecond],
  ['requests', (run) => run.summary.requests],
  ['ok', (run) => run.summary.ok],
  ['errorRate', (run) => run.summary.errorRate],
  ...latencyColumns<RunResult>('latency', (run) => run.summary.latency),
  ...latencyColumns<RunResult>('okLatency', (run) => run.summary.okLatency),
  ...errorColumns<RunResult>((run) => run.summary.errors),
  ...latencyColumns<RunResult>('healthz', (run) => run.summary.healthz),
  ['eventLoopDelayP99MaxMs', (run) => run.summary.eventLoopDelayP99MaxMs],
  ['libuvCanaryMaxMs', (run) => run.summary.libuvCanaryMaxMs],
  ['cpuCoresMean', (run) => run.summary.cpuCoresMean],
  ['peakRssBytes', (run) => run.summary.peakRssBytes],
  ['generatorCpuCores', (run) => run.generator.cpuCores],
  ['generatorSaturated', (run) => run.generator.saturated],
]

const referenceColumns: ReadonlyArray<CsvColumn<ReferenceFigures>> = [
  ['source', (reference) => reference.source],
  ['strategy', (reference) => reference.strategy],
  ['setup', (reference) => reference.setup],
  ['requestsPerSecond', (reference) => reference.requestsPerSecond],
  ['meanMs', (reference) => reference.meanMs],
  ['p50Ms', (reference) => reference.p50Ms],
  ['p95Ms', (reference) => reference.p95Ms],
  ['p99Ms', (reference) => reference.p99Ms],
  ['errorRate', (reference) => reference.errorRate],
  ['kneePerSecond', (reference) => reference.kneePerSecond],
  ['note', (reference) => reference.note],
]

/**
 * File name -> content. Always `seconds.csv`, `endpoints.csv` and `server.csv`; `knee.csv` for
 * a knee search, `comparison.csv` for a comparison, `references.csv` (the articles' figures,
 * not ours) when the scenario reproduces one of their experiments.
 */
export function renderCsv (result: LabResult): Record<string, string> {
  const files: Record<string, string> = {
    'seconds.csv': csv(secondColumns, perRun(result, (run) => run.seconds)),
    'endpoints.csv': csv(endpointColumns, perRun(result, (run) => [
      ...orderedEndpointNames(result, run).map((endpoint) => ({ endpoint, stats: run.endpoints[endpoint] as EndpointStats })),
      { endpoint: 'all endpoints', stats: run.all },
    ])),
    'server.csv': csv(serverColumns, perRun(result, (run) => run.server)),
  }
  if (result.knee !== undefined) files['knee.csv'] = csv(kneeColumns, result.knee.steps)
  if (result.command === 'compare') files['comparison.csv'] = csv(comparisonColumns, result.runs)
  if (result.references.length > 0) files['references.csv'] = csv(referenceColumns, result.references)
  return files
}
