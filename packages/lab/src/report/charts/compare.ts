/**
 * Comparison charts: one bar (or group of bars) per strategy, and every strategy over time on
 * one chart.
 */
import type { ChartDataset } from 'chart.js'
import type { ErrorCounts, LabResult, RunResult } from '../../result.js'
import {
  baseOptions, chartValues, namedColour, notMeasuredPlugin, referenceLinesPlugin, seriesColour, timeLineConfig, valueAxis,
  type AxisSpec, type BarConfig, type LineConfig, type ReferenceLine,
} from './common.js'
import { mebibytes, secondPoints, strategyDataset } from './time.js'

export type CompareBar = 'throughput' | 'latency' | 'healthz' | 'delay' | 'cpu' | 'rss' | 'errors'

export function barDataset (label: string, values: Array<number | null>, colour: string | string[]): ChartDataset<'bar', Array<number | null>> {
  return { label, data: values, backgroundColor: colour, borderColor: colour, borderWidth: 0, maxBarThickness: 48 }
}

export function barConfig (result: LabResult, datasets: Array<ChartDataset<'bar', Array<number | null>>>, axis: AxisSpec, lines: ReferenceLine[] = []): BarConfig {
  const values = chartValues({ type: 'bar', data: { datasets } })
  const options = baseOptions(axis.unit)
  return {
    type: 'bar',
    data: { labels: result.runs.map((run) => run.label), datasets },
    options: {
      ...options,
      interaction: { mode: 'index', intersect: false },
      plugins: { ...options.plugins, legend: { display: datasets.length > 1, position: 'bottom', labels: { boxWidth: 14 } } },
      scales: {
        x: { stacked: axis.stacked === true, grid: { display: false } },
        y: valueAxis(axis, values),
      },
    },
    plugins: [referenceLinesPlugin<'bar'>(lines), notMeasuredPlugin()],
  }
}

/** Failures by cause; non-2xx other than the overloaded 503s are counted by status. */
export function errorCauses (errors: ErrorCounts): { timeouts: number, overloaded: number, statuses: number, connection: number, other: number } {
  const statuses = Object.values(errors.byStatus).reduce((sum, count) => sum + count, 0) - errors.overloaded
  return { timeouts: errors.timeouts, overloaded: errors.overloaded, statuses: Math.max(0, statuses), connection: errors.connectionErrors, other: errors.other }
}

/** One comparison bar chart, strategies in the order they ran. */
export function compareBarConfig (result: LabResult, bar: CompareBar): BarConfig {
  const runs = result.runs
  const each = (pick: (run: RunResult) => number | null | undefined): Array<number | null> => runs.map((run) => pick(run) ?? null)
  const perStrategy = runs.map((_, index) => seriesColour(index))
  switch (bar) {
    case 'throughput':
      return barConfig(result, [barDataset('achieved iterations/s', each((run) => run.summary.achievedPerSecond), perStrategy)], { title: 'achieved iterations per second', unit: '/s', linear: true })
    case 'latency':
      return barConfig(result, [
        barDataset('p50', each((run) => run.summary.latency.p50Ms), namedColour('p50')),
        barDataset('p95', each((run) => run.summary.latency.p95Ms), namedColour('p95')),
        barDataset('p99', each((run) => run.summary.latency.p99Ms), namedColour('p99')),
      ], { title: 'ms', unit: 'ms' })
    case 'healthz':
      return barConfig(result, [
        barDataset('/healthz p99', each((run) => run.summary.healthz?.p99Ms), namedColour('healthz')),
        barDataset('/healthz max', each((run) => run.summary.healthz?.maxMs), '#7fc9b4'),
      ], { title: 'ms', unit: 'ms' })
    case 'delay':
      return barConfig(result, [
        barDataset('event-loop delay p99 (worst second)', each((run) => run.summary.eventLoopDelayP99MaxMs), namedColour('p99')),
        barDataset('libuv canary (slowest)', each((run) => run.summary.libuvCanaryMaxMs), seriesColour(3)),
      ], { title: 'ms', unit: 'ms' })
    case 'cpu': {
      const budget = result.machine.cpuBudget.cpus
      return barConfig(result, [barDataset('mean CPU', each((run) => run.summary.cpuCoresMean), perStrategy)],
        { title: 'cores', unit: 'cores', suggestedMax: budget * 1.1, linear: true },
        [{ axis: 'y', value: budget, label: `CPU budget: ${budget} cores`, colour: namedColour('limit') }])
    }
    case 'rss':
      return barConfig(result, [barDataset('peak RSS', each((run) => mebibytes(run.summary.peakRssBytes)), perStrategy)], { title: 'MiB', unit: 'MiB', linear: true })
    case 'errors':
      return barConfig(result, [
        barDataset('timeouts', each((run) => errorCauses(run.summary.errors).timeouts), namedColour('p99')),
        barDataset('503 overloaded (Retry-After)', each((run) => errorCauses(run.summary.errors).overloaded), namedColour('p95')),
        barDataset('other non-2xx', each((run) => errorCauses(run.summary.errors).statuses), seriesColour(3)),
        barDataset('connection errors', each((run) => errorCauses(run.summary.errors).connection), seriesColour(6)),
        barDataset('other', each((run) => errorCauses(run.summary.errors).other), seriesColour(7)),
      ], { title: 'failed requests', unit: '', stacked: true })
  }
}

export type CompareOverTime = 'p99' | 'achieved'

/** Every strategy on one chart over time: the p99 of every request, or achieved iterations per second. */
export function compareOverTimeConfig (result: LabResult, metric: CompareOverTime): LineConfig {
  const datasets = result.runs.map((run, index) => strategyDataset(run.label, metric === 'p99'
    ? secondPoints(run, (sample) => sample.all.latency.p99Ms)
    : secondPoints(run, (sample) => sample.achieved), index))
  return timeLineConfig(datasets, metric === 'p99' ? { title: 'p99 ms', unit: 'ms' } : { title: 'achieved iterations per second', unit: '/s', linear: true })
}
