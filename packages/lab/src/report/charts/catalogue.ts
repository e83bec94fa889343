/**
 * Every chart of the report as one table: its title, what it shows in words (the canvas's
 * accessible label) and its Chart.js configuration, built from the result alone; and which
 * charts a result calls for. A chart whose every value is unmeasured is left out and named
 * instead ("not measured"), so a report never shows an empty frame as if it were a flat line.
 */
import type { ChartDataset } from 'chart.js'
import type { CurveStep, KneeResult, KneeStep, LabResult, LatencySummary, RunResult, SecondSample, ServerSample, SizingFlow } from '../../result.js'
import { formatMs, formatRate } from '../format.js'
import {
  barChartConfig, barDataset, colours, hasData, lineChartConfig, lineDataset, seriesColour, type AnyChartConfig, type AxisSpec, type LineConfig, type ReferenceLine, type XY,
} from './common.js'

type Value<T> = (item: T) => number | null | undefined
type Series<T> = [label: string, value: Value<T>, colour: string, dashed?: boolean]

const timeAxis = { title: 'seconds since the load started', fromZero: true }
const rateAxis = { title: 'offered rate (arrivals per second)', fromZero: false }
const msAxis: AxisSpec = { title: 'ms', unit: 'ms' }
const everyStrategy = 'one line per strategy'

function points<T extends { t: number }> (items: readonly T[], value: Value<T>): XY[] {
  return items.map((item) => ({ x: item.t, y: value(item) ?? null }))
}

function lines<T extends { t: number }> (items: readonly T[], series: Array<Series<T>>): Array<ChartDataset<'line', XY[]>> {
  return series.map(([label, value, colour, dashed]) => lineDataset(label, points(items, value), colour, { dashed: dashed === true }))
}

/** The p50, p95 and p99 series of the latency each item has. */
const percentiles = <T>(latency: (item: T) => LatencySummary | null | undefined): Array<Series<T>> =>
  (['p50', 'p95', 'p99'] as const).map((name) => [name, (item) => latency(item)?.[`${name}Ms`], colours[name]])

const mebibytes = (bytes: number | null | undefined): number | null => (bytes == null ? null : bytes / 1048576)

function cpuBudgetLine (result: LabResult): ReferenceLine {
  const budget = result.machine.cpuBudget.cpus
  return { axis: 'y', value: budget, label: `CPU budget: ${budget} cores`, colour: colours.limit }
}

/** One strategy's line where every strategy shares a chart: its colour by run order, and saying so when it has no data. */
function strategyDataset (label: string, data: XY[], index: number): ChartDataset<'line', XY[]> {
  return lineDataset(data.some((point) => point.y !== null) ? label : `${label} (not measured)`, data, seriesColour(index))
}

interface ServerSignal {
  title: string
  /** The description for one run's chart, and for the chart of every strategy. */
  description: [one: string, every: string]
  axis: (result: LabResult) => AxisSpec
  /** One run's lines; the first stands for the run when strategies share a chart. */
  series: Array<Series<ServerSample>>
  /** CPU and RSS: the second line (the process tree) stands for the run where it was measured. */
  treeFirst?: boolean
  /** CPU: the dashed line of the CPU budget. */
  budget?: boolean
}

const processAndTree = (process: Value<ServerSample>, tree: Value<ServerSample>): Array<Series<ServerSample>> => [
  ['service process', process, seriesColour(0)],
  ['process tree (children, workers)', tree, seriesColour(1), true],
]

const serverSignals = {
  'server-cpu': {
    title: 'CPU of the service',
    description: ['CPU of the service in cores each second, the process and its process tree; the dashed line is the CPU budget',
      `CPU of the service in cores each second, ${everyStrategy} (process tree where measured); the dashed line is the CPU budget`],
    axis: (result) => ({ title: 'cores', unit: 'cores', suggestedMax: result.machine.cpuBudget.cpus * 1.1, linear: true }),
    series: processAndTree((sample) => sample.cpuCores, (sample) => sample.processTreeCpuCores),
    treeFirst: true,
    budget: true,
  },
  'server-event-loop': {
    title: 'Event-loop delay',
    description: ['event-loop delay of the service in ms each second, p99 and max: how long a ready callback waited',
      `event-loop delay of the service in ms each second, p99, ${everyStrategy}: how long a ready callback waited`],
    axis: () => msAxis,
    series: [['p99', (sample) => sample.eventLoopDelayP99Ms, colours.p99], ['max', (sample) => sample.eventLoopDelayMaxMs, colours.p95, true]],
  },
  'server-libuv': {
    title: 'libuv pool canary',
    description: ['time in ms a tiny libuv-pool operation took each second, the pool-starvation article\'s canary',
      `time in ms a tiny libuv-pool operation took each second, ${everyStrategy}`],
    axis: () => msAxis,
    series: [['canary', (sample) => sample.libuvCanaryMs, seriesColour(3)]],
  },
  'server-hash-queue': {
    title: 'Hash queue',
    description: ['hashes waiting and running each second, and hashes refused at admission per second', `hashes waiting in the queue each second, ${everyStrategy}`],
    axis: () => ({ title: 'hashes', unit: '', linear: true }),
    series: [
      ['waiting', (sample) => sample.hashQueued, seriesColour(0)],
      ['running', (sample) => sample.hashRunning, seriesColour(2)],
      ['refused at admission per second', (sample) => sample.hashRejected, colours.failed, true],
    ],
  },
  'server-rss': {
    title: 'Memory (RSS)',
    description: ['resident memory of the service in MiB each second, the process and its process tree',
      `resident memory of the service in MiB each second, ${everyStrategy} (process tree where measured)`],
    axis: () => ({ title: 'MiB', unit: 'MiB', linear: true }),
    series: processAndTree((sample) => mebibytes(sample.rssBytes), (sample) => mebibytes(sample.processTreeRssBytes)),
    treeFirst: true,
  },
} satisfies Record<string, ServerSignal>

/** One run: every line with data; several: the line that stands for each run. */
function serverSignalConfig (result: LabResult, signal: ServerSignal, runs: RunResult[]): LineConfig {
  const only = runs.length === 1 ? runs[0] : undefined
  const datasets = only !== undefined
    ? lines(only.server, signal.series).filter((dataset) => dataset.data.some((point) => point.y !== null))
    : runs.map((run, index) => {
      const [process, tree] = signal.series
      const measuredTree = signal.treeFirst === true && tree !== undefined && run.server.some((sample) => tree[1](sample) != null)
      return strategyDataset(run.label, points(run.server, (measuredTree ? tree : process)?.[1] ?? (() => null)), index)
    })
  return lineChartConfig(datasets, timeAxis, signal.axis(result), signal.budget === true ? [cpuBudgetLine(result)] : [])
}

/** The sizing flow whose run is `run`. */
function sizingFlowOf (result: LabResult, run: RunResult | undefined): SizingFlow | undefined {
  const index = run === undefined ? -1 : result.runs.indexOf(run)
  return result.sizing?.deployments.flatMap((deployment) => deployment.flows).find((flow) => flow.run === index)
}

/** One line per kind of clients over the curve's steps, at x = offered rate (or `x`); dots mark the steps. */
function curveLines (flow: SizingFlow, value: (step: CurveStep) => number | null, what?: string, dashed = false, x: (step: CurveStep) => number = (step) => step.offeredPerSecond): Array<ChartDataset<'line', XY[]>> {
  const kinds = [...new Set(flow.curve.map((step) => step.clients))]
  return kinds.map((kind) => ({
    ...lineDataset(what === undefined ? kind : `${kind} ${what}`, flow.curve.filter((step) => step.clients === kind).map((step) => ({ x: x(step), y: value(step) })), kind === 'naive' ? colours.failed : colours.achieved, { dashed }),
    pointRadius: 3,
  }))
}

/** Steps that held are dots, steps that failed are crosses: the reader sees where it broke. */
function stepDataset (knee: KneeResult, [label, value, colour]: Series<KneeStep>): ChartDataset<'line', XY[]> {
  return {
    ...lineDataset(label, knee.steps.map((step) => ({ x: step.offeredPerSecond, y: value(step) ?? null })), colour),
    pointRadius: knee.steps.map((step) => step.held ? 3 : 6),
    pointStyle: knee.steps.map((step) => step.held ? 'circle' : 'crossRot'),
    pointBorderWidth: knee.steps.map((step) => step.held ? 1 : 2.5),
  }
}

function kneeMarker (knee: KneeResult): ReferenceLine[] {
  return knee.kneePerSecond === null ? [] : [{ axis: 'x', value: knee.kneePerSecond, label: `knee: ${formatRate(knee.kneePerSecond)}/s`, colour: '#222222' }]
}

/** Bars of one whole-run figure per strategy; series without a colour take each strategy's. */
function bars (result: LabResult, series: Array<Series<RunResult> | [label: string, value: Value<RunResult>]>, axis: AxisSpec, referenceLines: ReferenceLine[] = []): AnyChartConfig {
  const perStrategy = result.runs.map((_, index) => seriesColour(index))
  const datasets = series.map(([label, value, colour]) => barDataset(label, result.runs.map((run) => value(run) ?? null), colour ?? perStrategy))
  return barChartConfig(result.runs.map((run) => run.label), datasets, axis, referenceLines)
}

interface ChartDefinition {
  title: string
  description: (result: LabResult, one: RunResult | undefined) => string
  /** Null when the result has nothing for it (no such run, no knee). */
  config: (result: LabResult, one: RunResult | undefined) => AnyChartConfig | null
  /** Its title names the run (the charts of each strategy). */
  namesRun?: boolean
}

const charts = {
  latency: {
    title: 'Latency over time',
    namesRun: true,
    description: (result) => `p50, p95 and p99 latency in ms of the requests ending in each second${result.load.model === 'open' ? ', measured from their intended send time' : ''}, and the p99 of the /healthz probes and of the same probes of an empty server beside the service (the machine's floor)`,
    config: (_, run) => run === undefined
      ? null
      : lineChartConfig(lines<SecondSample>(run.seconds, [
        ...percentiles((sample: SecondSample) => sample.all.latency),
        ['/healthz p99', (sample) => sample.healthz?.p99Ms, colours.healthz, true],
        ['floor p99', (sample) => sample.healthzFloor?.p99Ms, colours.floor, true],
      ]), timeAxis, msAxis),
  },
  throughput: {
    title: 'Throughput over time',
    namesRun: true,
    description: (result) => 'offered and achieved iterations per second, failed requests and dropped arrivals per second' + (result.load.model === 'closed' ? ', and active virtual users on the right axis' : ''),
    config: (_, run) => {
      if (run === undefined) return null
      const closed = run.seconds.some((sample) => sample.vus !== null)
      const datasets = lines<SecondSample>(run.seconds, [
        ['offered', (sample) => sample.offered, colours.offered, true],
        ['achieved', (sample) => sample.achieved, colours.achieved],
        ['failed requests', (sample) => sample.all.requests - sample.all.ok, colours.failed],
        ['dropped', (sample) => sample.dropped, colours.dropped],
      ])
      if (closed) datasets.push(lineDataset('virtual users (right axis)', points(run.seconds, (sample) => sample.vus), colours.vus, { dashed: true, rightAxis: true }))
      return lineChartConfig(datasets, timeAxis, { title: 'per second', unit: '/s', linear: true, ...(closed ? { rightTitle: 'virtual users' } : {}) })
    },
  },
  ...Object.fromEntries(Object.entries(serverSignals).map(([kind, signal]): [string, ChartDefinition] => [kind, {
    title: signal.title,
    description: (_, run) => signal.description[run === undefined ? 1 : 0],
    config: (result, run) => serverSignalConfig(result, signal, run === undefined ? result.runs : [run]),
  }])) as Record<keyof typeof serverSignals, ChartDefinition>,
  'knee-latency': {
    title: 'Latency versus offered rate',
    description: () => 'p50, p95 and p99 latency in ms of each step against its offered rate; crosses mark failed steps; dashed lines mark the knee and the p99 limit',
    config: ({ knee }) => {
      if (knee === undefined) return null
      const limit = knee.criteria.p99LimitMs
      return lineChartConfig(percentiles((step: KneeStep) => step.latency).map((series) => stepDataset(knee, series)), rateAxis, { ...msAxis, suggestedMax: limit * 1.1 }, [
        ...kneeMarker(knee),
        { axis: 'y', value: limit, label: `p99 limit: ${formatMs(limit)} ms`, colour: colours.limit },
      ])
    },
  },
  'knee-throughput': {
    title: 'Achieved versus offered rate',
    description: () => 'achieved against offered iterations per second for each step, with the line where they are equal and the margin below which a step fails; the dashed vertical line marks the knee',
    config: ({ knee }) => {
      if (knee === undefined) return null
      // On the diagonal the service keeps up; below the margin line a step fails.
      const offered = knee.steps.map((step) => step.offeredPerSecond)
      const ends = offered.length === 0 ? [] : [Math.min(...offered), Math.max(...offered)]
      const keepsUp = (share: number): XY[] => ends.map((rate) => ({ x: rate, y: rate * share }))
      const floor = 1 - knee.criteria.throughputMargin
      return lineChartConfig([
        stepDataset(knee, ['achieved', (step) => step.achievedPerSecond, colours.achieved]),
        lineDataset('achieved = offered', keepsUp(1), colours.offered, { dashed: true }),
        lineDataset(`holds above (offered × ${floor.toFixed(2)})`, keepsUp(floor), colours.limit, { dashed: true }),
      ], rateAxis, { title: 'achieved iterations per second', unit: '/s', linear: true, fromZero: false }, kneeMarker(knee))
    },
  },
  'compare-p99': {
    title: 'p99 latency over time',
    description: () => `p99 latency in ms of the requests ending in each second, ${everyStrategy}`,
    config: (result) => lineChartConfig(result.runs.map((run, index) => strategyDataset(run.label, points(run.seconds, (sample) => sample.all.latency.p99Ms), index)),
      timeAxis, { title: 'p99 ms', unit: 'ms' }),
  },
  'compare-achieved': {
    title: 'Achieved throughput over time',
    description: () => `achieved iterations per second, ${everyStrategy}`,
    config: (result) => lineChartConfig(result.runs.map((run, index) => strategyDataset(run.label, points(run.seconds, (sample) => sample.achieved), index)),
      timeAxis, { title: 'achieved iterations per second', unit: '/s', linear: true }),
  },
  'bar-throughput': {
    title: 'Achieved throughput',
    description: () => 'successful iterations per second over the whole run, one bar per strategy',
    config: (result) => bars(result, [['achieved iterations/s', (run) => run.summary.achievedPerSecond]], { title: 'achieved iterations per second', unit: '/s', linear: true }),
  },
  'bar-latency': {
    title: 'Latency percentiles',
    description: () => 'p50, p95 and p99 latency in ms of every request over the whole run, grouped by strategy',
    config: (result) => bars(result, percentiles((run: RunResult) => run.summary.latency), msAxis),
  },
  'bar-healthz': {
    title: '/healthz during the load',
    description: () => 'p99 and max latency in ms of the /healthz probes during the load, and the p99 of the same probes of an empty server beside the service (the machine\'s floor), grouped by strategy',
    config: (result) => bars(result, [['/healthz p99', (run) => run.summary.healthz?.p99Ms, colours.healthz], ['/healthz max', (run) => run.summary.healthz?.maxMs, '#7fc9b4'], ['floor p99', (run) => run.summary.healthzFloor?.p99Ms, colours.floor]], msAxis),
  },
  'bar-delay': {
    title: 'Event loop and libuv pool',
    description: () => 'the worst second\'s event-loop delay p99 and the slowest libuv canary, in ms, grouped by strategy',
    config: (result) => bars(result, [
      ['event-loop delay p99 (worst second)', (run) => run.summary.eventLoopDelayP99MaxMs, colours.p99],
      ['libuv canary (slowest)', (run) => run.summary.libuvCanaryMaxMs, seriesColour(3)],
    ], msAxis),
  },
  'bar-cpu': {
    title: 'CPU used',
    description: () => 'mean CPU of the service in cores during the load, one bar per strategy; the dashed line is the CPU budget',
    config: (result) => bars(result, [['mean CPU', (run) => run.summary.cpuCoresMean]],
      { title: 'cores', unit: 'cores', suggestedMax: result.machine.cpuBudget.cpus * 1.1, linear: true }, [cpuBudgetLine(result)]),
  },
  'bar-rss': {
    title: 'Peak memory',
    description: () => 'peak resident memory of the service in MiB, one bar per strategy',
    config: (result) => bars(result, [['peak RSS', (run) => mebibytes(run.summary.peakRssBytes)]], { title: 'MiB', unit: 'MiB', linear: true }),
  },
  'bar-errors': {
    title: 'Failed requests by cause',
    description: () => 'requests without a 2xx, stacked by cause: timeouts, 503s with Retry-After, other statuses, connection errors, other',
    config: (result) => bars(result, [
      ['timeouts', (run) => run.summary.errors.timeouts, colours.p99],
      ['503 overloaded (Retry-After)', (run) => run.summary.errors.overloaded, colours.p95],
      // Non-2xx other than the overloaded 503s.
      ['other non-2xx', ({ summary: { errors } }) => Math.max(0, Object.values(errors.byStatus).reduce((sum, count) => sum + count, 0) - errors.overloaded), seriesColour(3)],
      ['connection errors', (run) => run.summary.errors.connectionErrors, seriesColour(6)],
      ['other', (run) => run.summary.errors.other, seriesColour(7)],
    ], { title: 'failed requests', unit: '', stacked: true }),
  },
  'sizing-goodput': {
    title: 'Goodput against offered load',
    namesRun: true,
    description: () => 'arrivals that succeeded per second against those offered, at each multiple of the knee, for naive clients (retry a 503 at once) and polite ones (wait out Retry-After); the dashed lines are goodput = offered and the knee',
    config: (result, run) => {
      const flow = sizingFlowOf(result, run)
      if (flow === undefined) return null
      const offered = flow.curve.map((step) => step.offeredPerSecond)
      const diagonal = offered.length === 0 ? [] : [0, Math.max(...offered)].map((rate) => ({ x: rate, y: rate }))
      return lineChartConfig([
        ...curveLines(flow, (step) => step.goodputPerSecond),
        lineDataset('goodput = offered', diagonal, colours.offered, { dashed: true }),
      ], { title: 'offered arrivals per second', fromZero: true }, { title: 'succeeded per second', unit: '/s', linear: true },
      flow.knee.kneePerSecond === null ? [] : [{ axis: 'y', value: flow.knee.kneePerSecond, label: `knee: ${formatRate(flow.knee.kneePerSecond)}/s`, colour: '#222222' }])
    },
  },
  'sizing-latency': {
    title: 'Latency against offered load',
    namesRun: true,
    description: () => 'p99 in ms of the arrivals that succeeded (from the arrival, retries included), and p99 of /healthz, at each multiple of the knee, for naive and polite clients',
    config: (result, run) => {
      const flow = sizingFlowOf(result, run)
      if (flow === undefined) return null
      return lineChartConfig([
        ...curveLines(flow, (step) => step.okLatency.p99Ms, 'p99', false, (step) => step.multiple),
        ...curveLines(flow, (step) => step.healthz?.p99Ms ?? null, '/healthz p99', true, (step) => step.multiple),
      ], { title: 'offered load (× the knee)', fromZero: true }, msAxis)
    },
  },
} satisfies Record<string, ChartDefinition>

export type ChartKind = keyof typeof charts
const chartCatalogue: Readonly<Record<ChartKind, ChartDefinition>> = charts

/** A chart the page draws: its kind and, for one run's charts, the run's index (else every run). */
export interface ChartSpec {
  kind: ChartKind
  run: number | null
}

export function chartConfig (result: LabResult, spec: ChartSpec): AnyChartConfig | null {
  const chart = chartCatalogue[spec.kind] as ChartDefinition | undefined
  if (chart === undefined) return null
  const run = spec.run === null ? undefined : result.runs[spec.run]
  return spec.run !== null && run === undefined ? null : chart.config(result, run)
}

interface ChartPanel extends ChartSpec {
  /** The canvas's id, unique in the page. */
  id: string
  title: string
  description: string
}

export interface ChartGroup {
  /** A sub-heading (compare: the strategy), or null. */
  heading: string | null
  panels: ChartPanel[]
  /** Titles of the charts left out because nothing they show was measured. */
  notMeasured: string[]
}

function group (result: LabResult, heading: string | null, kinds: ChartKind[], run: number | null): ChartGroup {
  const one = run === null ? undefined : result.runs[run]
  const panels: ChartPanel[] = []
  const notMeasured: string[] = []
  for (const kind of kinds) {
    const chart = chartCatalogue[kind]
    const title = chart.namesRun === true && one !== undefined ? `${chart.title} (${one.label})` : chart.title
    const config = chartConfig(result, { kind, run })
    if (config !== null && hasData(config)) panels.push({ kind, run, id: `chart-${kind}-${run ?? 'all'}`, title, description: chart.description(result, one) })
    else notMeasured.push(title)
  }
  return { heading, panels, notMeasured }
}

const overTime: ChartKind[] = ['latency', 'throughput']
const serverKinds: ChartKind[] = ['server-cpu', 'server-event-loop', 'server-libuv', 'server-hash-queue', 'server-rss']

/** `run` and `knee`: the one run over time, and what the service said about itself. */
export const runOverTimeCharts = (result: LabResult): ChartGroup => group(result, null, overTime, 0)
export const serverCharts = (result: LabResult): ChartGroup => group(result, null, serverKinds, 0)
export const kneeCharts = (result: LabResult): ChartGroup => group(result, null, ['knee-latency', 'knee-throughput'], null)

/** `compare`: strategies side by side; every strategy on one chart over time; each strategy over time. */
export const comparisonBarCharts = (result: LabResult): ChartGroup =>
  group(result, null, ['bar-throughput', 'bar-latency', 'bar-healthz', 'bar-delay', 'bar-cpu', 'bar-rss', 'bar-errors'], null)
export const comparisonOverTimeCharts = (result: LabResult): ChartGroup => group(result, null, ['compare-p99', 'compare-achieved', ...serverKinds], null)
export const strategyCharts = (result: LabResult): ChartGroup[] => result.runs.map((run, index) => group(result, run.label, overTime, index))

/** `sizing`: each flow's overload curve, goodput and latency against the offered load. */
export const sizingCurveCharts = (result: LabResult): ChartGroup[] => (result.sizing?.deployments ?? []).flatMap((deployment) => deployment.flows)
  .map((flow) => group(result, null, ['sizing-goodput', 'sizing-latency'], flow.run))
