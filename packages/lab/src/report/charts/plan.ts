/**
 * Which charts a result calls for, with their headings and accessible descriptions. A chart
 * whose every value is unmeasured is left out and named instead ("not measured"), so a report
 * never shows an empty frame as if it were a flat line.
 */
import type { LabResult } from '../../result.js'
import { hasData } from './common.js'
import { chartConfig, type ChartKind, type ChartSpec } from './draw.js'

export interface ChartPanel extends ChartSpec {
  /** The canvas's id, unique in the page. */
  id: string
  title: string
  /** What the chart shows, in words: the canvas's accessible label. */
  description: string
}

export interface ChartGroup {
  /** A sub-heading (compare: the strategy), or null. */
  heading: string | null
  panels: ChartPanel[]
  /** Titles of the charts left out because nothing they show was measured. */
  notMeasured: string[]
}

function describe (kind: ChartKind, result: LabResult, runLabel: string | null): { title: string, description: string } {
  const of = runLabel === null ? '' : ` (${runLabel})`
  const everyStrategy = 'one line per strategy'
  switch (kind) {
    case 'latency': return { title: `Latency over time${of}`, description: `p50, p95 and p99 latency in ms of the requests ending in each second${result.load.model === 'open' ? ', measured from their intended send time' : ''}, and the p99 of the /healthz probes` }
    case 'throughput': return { title: `Throughput over time${of}`, description: 'offered and achieved iterations per second, failed requests and dropped arrivals per second' + (result.load.model === 'closed' ? ', and active virtual users on the right axis' : '') }
    case 'server-cpu': return { title: 'CPU of the service', description: `CPU of the service in cores each second, ${runLabel === null ? everyStrategy + ' (process tree where measured)' : 'the process and its process tree'}; the dashed line is the CPU budget` }
    case 'server-event-loop': return { title: 'Event-loop delay', description: `event-loop delay of the service in ms each second, ${runLabel === null ? `p99, ${everyStrategy}` : 'p99 and max'}: how long a ready callback waited` }
    case 'server-libuv': return { title: 'libuv pool canary', description: `time in ms a tiny libuv-pool operation took each second, ${runLabel === null ? everyStrategy : 'the pool-starvation article\'s canary'}` }
    case 'server-hash-queue': return { title: 'Hash queue', description: runLabel === null ? `hashes waiting in the queue each second, ${everyStrategy}` : 'hashes waiting and running each second, and hashes refused at admission per second' }
    case 'server-rss': return { title: 'Memory (RSS)', description: `resident memory of the service in MiB each second, ${runLabel === null ? everyStrategy + ' (process tree where measured)' : 'the process and its process tree'}` }
    case 'knee-latency': return { title: 'Latency versus offered rate', description: 'p50, p95 and p99 latency in ms of each step against its offered rate; crosses mark failed steps; dashed lines mark the knee and the p99 limit' }
    case 'knee-throughput': return { title: 'Achieved versus offered rate', description: 'achieved against offered iterations per second for each step, with the line where they are equal and the margin below which a step fails; the dashed vertical line marks the knee' }
    case 'compare-p99': return { title: 'p99 latency over time', description: `p99 latency in ms of the requests ending in each second, ${everyStrategy}` }
    case 'compare-achieved': return { title: 'Achieved throughput over time', description: `achieved iterations per second, ${everyStrategy}` }
    case 'bar-throughput': return { title: 'Achieved throughput', description: 'successful iterations per second over the whole run, one bar per strategy' }
    case 'bar-latency': return { title: 'Latency percentiles', description: 'p50, p95 and p99 latency in ms of every request over the whole run, grouped by strategy' }
    case 'bar-healthz': return { title: '/healthz during the load', description: 'p99 and max latency in ms of the /healthz probes during the load, grouped by strategy' }
    case 'bar-delay': return { title: 'Event loop and libuv pool', description: 'the worst second\'s event-loop delay p99 and the slowest libuv canary, in ms, grouped by strategy' }
    case 'bar-cpu': return { title: 'CPU used', description: 'mean CPU of the service in cores during the load, one bar per strategy; the dashed line is the CPU budget' }
    case 'bar-rss': return { title: 'Peak memory', description: 'peak resident memory of the service in MiB, one bar per strategy' }
    case 'bar-errors': return { title: 'Failed requests by cause', description: 'requests without a 2xx, stacked by cause: timeouts, 503s with Retry-After, other statuses, connection errors, other' }
  }
}

function group (result: LabResult, heading: string | null, kinds: ChartKind[], run: number | null): ChartGroup {
  const runLabel = run === null ? null : (result.runs[run]?.label ?? null)
  const panels: ChartPanel[] = []
  const notMeasured: string[] = []
  for (const kind of kinds) {
    const text = describe(kind, result, runLabel)
    const config = chartConfig(result, { kind, run })
    if (config !== null && hasData(config)) panels.push({ kind, run, id: `chart-${kind}-${run ?? 'all'}`, ...text })
    else notMeasured.push(text.title)
  }
  return { heading, panels, notMeasured }
}

const serverKinds: ChartKind[] = ['server-cpu', 'server-event-loop', 'server-libuv', 'server-hash-queue', 'server-rss']

/** `run` and `knee`: the one run over time. */
export function runOverTimeCharts (result: LabResult): ChartGroup {
  return group(result, null, ['latency', 'throughput'], 0)
}

/** `run` and `knee`: what the service said about itself. */
export function serverCharts (result: LabResult): ChartGroup {
  return group(result, null, serverKinds, 0)
}

export function kneeCharts (result: LabResult): ChartGroup {
  return group(result, null, ['knee-latency', 'knee-throughput'], null)
}

/** `compare`: strategies side by side. */
export function comparisonBarCharts (result: LabResult): ChartGroup {
  return group(result, null, ['bar-throughput', 'bar-latency', 'bar-healthz', 'bar-delay', 'bar-cpu', 'bar-rss', 'bar-errors'], null)
}

/** `compare`: every strategy on one chart over time. */
export function comparisonOverTimeCharts (result: LabResult): ChartGroup {
  return group(result, null, ['compare-p99', 'compare-achieved', ...serverKinds], null)
}

/** `compare`: each strategy's latency and throughput over time. */
export function strategyCharts (result: LabResult): ChartGroup[] {
  return result.runs.map((run, index) => group(result, run.label, ['latency', 'throughput'], index))
}
