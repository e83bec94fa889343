/**
 * Which charts a result calls for, with their headings and accessible descriptions. A chart
 * whose every value is unmeasured is left out and named instead ("not measured"), so a report
 * never shows an empty frame as if it were a flat line.
 */
import type { LabResult } from '../../result.js'
import { chartCatalogue, chartConfig, type ChartKind, type ChartSpec } from './catalogue.js'
import { hasData } from './common.js'

export interface ChartPanel extends ChartSpec {
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
