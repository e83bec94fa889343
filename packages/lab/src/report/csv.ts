/**
 * The result as CSV files for spreadsheets: RFC 4180 (CRLF line ends, quoted fields where
 * needed, quotes doubled), a header row always, an empty cell for an unmeasured value.
 * Numbers are written as measured, unrounded.
 */
import { percentileFields, serverSignalNames, serviceCpuMsPerAchieved, type EndpointStats, type ErrorCounts, type KneeStep, type LabResult, type ReferenceFigures, type RunResult, type RunSummary, type SecondSample, type ServerSample } from '../result.js'

type CsvValue = string | number | boolean | null | undefined

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

/** Columns of the named fields of an object picked from the row, headed `<prefix><Field>` (no prefix: the field's name). */
function fields<Row, T extends object> (pick: (row: Row) => T | null | undefined, names: ReadonlyArray<keyof T & string>, prefix = ''): Array<CsvColumn<Row>> {
  return names.map((name) => [prefix === '' ? name : prefix + name.charAt(0).toUpperCase() + name.slice(1), (row) => pick(row)?.[name] as CsvValue])
}

const latencyFields = ['count', ...percentileFields] as const

/** The error counts, with the non-2xx responses by status in one cell: "401=3 503=20". */
function errorColumns<Row> (pick: (row: Row) => ErrorCounts): Array<CsvColumn<Row>> {
  return [
    ...fields(pick, ['overloaded', 'timeouts', 'connectionErrors']),
    ['otherErrors', (row) => pick(row).other],
    ['byStatus', (row) => Object.entries(pick(row).byStatus).sort(([a], [b]) => a.localeCompare(b)).map(([status, count]) => `${status}=${count}`).join(' ')],
  ]
}

interface Labelled<Item> { run: string, item: Item }
type Endpoint = Labelled<{ endpoint: string, stats: EndpointStats }>

function perRun<Item> (result: LabResult, items: (run: RunResult) => Item[]): Array<Labelled<Item>> {
  return result.runs.flatMap((run) => items(run).map((item) => ({ run: run.label, item })))
}

const run: CsvColumn<Labelled<unknown>> = ['run', (row) => row.run]

const secondColumns: ReadonlyArray<CsvColumn<Labelled<SecondSample>>> = [
  run,
  ...fields((row: Labelled<SecondSample>) => row.item, ['t', 'phase', 'offered', 'started', 'achieved', 'dropped', 'inFlight', 'vus']),
  ...fields((row: Labelled<SecondSample>) => row.item.all, ['requests', 'ok']),
  ...fields((row: Labelled<SecondSample>) => row.item.all.latency, latencyFields),
  ...fields((row: Labelled<SecondSample>) => row.item.all.errors, ['timeouts', 'overloaded', 'connectionErrors']),
  ['healthzP99Ms', (row) => row.item.healthz?.p99Ms],
  ['healthzFloorP99Ms', (row) => row.item.healthzFloor?.p99Ms],
  ['generatorUtilisation', (row) => row.item.generatorUtilisation],
]

const serverColumns = [run, ...fields((row: Labelled<ServerSample>) => row.item, ['t', ...serverSignalNames])]

const endpointColumns: ReadonlyArray<CsvColumn<Endpoint>> = [
  run,
  ['endpoint', (row) => row.item.endpoint],
  ...fields((row: Endpoint) => row.item.stats, ['requests', 'ok']),
  ...fields((row: Endpoint) => row.item.stats.latency, latencyFields, 'latency'),
  ...fields((row: Endpoint) => row.item.stats.okLatency, latencyFields, 'okLatency'),
  ...fields((row: Endpoint) => row.item.stats.refusedLatency, latencyFields, 'refusedLatency'),
  ...errorColumns((row: Endpoint) => row.item.stats.errors),
]

const kneeColumns: ReadonlyArray<CsvColumn<KneeStep>> = [
  ['step', (step) => step.index + 1],
  ...fields((step: KneeStep) => step, ['offeredPerSecond', 'achievedPerSecond']),
  ...fields((step: KneeStep) => step.latency, latencyFields, 'latency'),
  ...fields((step: KneeStep) => step, ['errorRate', 'dropped', 'startT', 'endT', 'held']),
  ['failedBecause', (step) => step.failedBecause.join('; ')],
]

const summary = (run: RunResult): RunSummary => run.summary
const comparisonColumns: ReadonlyArray<CsvColumn<RunResult>> = [
  ['run', (row) => row.label],
  ...fields((row: RunResult) => row.service, ['strategy', 'url', 'startedByLab']),
  ...fields(summary, ['durationSeconds', 'achievedPerSecond', 'achievedAfterEnd', 'requestsPerSecond', 'requests', 'ok', 'errorRate']),
  ...fields((row: RunResult) => row.summary.latency, latencyFields, 'latency'),
  ...fields((row: RunResult) => row.summary.okLatency, latencyFields, 'okLatency'),
  ...fields((row: RunResult) => row.summary.refusedLatency, latencyFields, 'refusedLatency'),
  ...errorColumns((row: RunResult) => row.summary.errors),
  ...fields((row: RunResult) => row.summary.healthz, latencyFields, 'healthz'),
  ...fields((row: RunResult) => row.summary.healthzFloor, latencyFields, 'healthzFloor'),
  ...fields(summary, ['eventLoopDelayP99MaxMs', 'libuvCanaryMaxMs', 'cpuCoresMean', 'peakRssBytes']),
  ['generatorCpuCores', (row) => row.generator.cpuCores],
  ['generatorSaturated', (row) => row.generator.saturated],
  ['serviceCpuMsPerAchieved', (row) => serviceCpuMsPerAchieved(row.summary)],
  ['scenario', (row) => row.scenario],
]

const referenceColumns = fields((row: ReferenceFigures) => row,
  ['source', 'strategy', 'setup', 'requestsPerSecond', 'meanMs', 'p50Ms', 'p95Ms', 'p99Ms', 'errorRate', 'kneePerSecond', 'note'])

/**
 * File name -> content. Always `seconds.csv`, `endpoints.csv` and `server.csv`; `knee.csv` for
 * a knee search, `comparison.csv` for a comparison, `references.csv` (the articles' figures,
 * not ours) when the scenario reproduces one of their experiments.
 */
export function renderCsv (result: LabResult): Record<string, string> {
  const files: Record<string, string> = {
    'seconds.csv': csv(secondColumns, perRun(result, (run) => run.seconds)),
    'endpoints.csv': csv(endpointColumns, perRun(result, (run) => [
      ...Object.entries(run.endpoints).map(([endpoint, stats]) => ({ endpoint, stats })),
      { endpoint: 'all endpoints', stats: run.all },
    ])),
    'server.csv': csv(serverColumns, perRun(result, (run) => run.server)),
  }
  if (result.knee !== undefined) files['knee.csv'] = csv(kneeColumns, result.knee.steps)
  if (result.command === 'compare') files['comparison.csv'] = csv(comparisonColumns, result.runs)
  if (result.references.length > 0) files['references.csv'] = csv(referenceColumns, result.references)
  return files
}
