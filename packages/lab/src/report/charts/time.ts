/** Charts of one run over time: latency, throughput and the service's own signals. */
import type { ChartDataset } from 'chart.js'
import type { LabResult, RunResult, SecondSample, ServerSample } from '../../result.js'
import { lineDataset, namedColour, seriesColour, timeLineConfig, type AxisSpec, type LineConfig, type ReferenceLine, type XY } from './common.js'

export type ServerSignal = 'cpu' | 'event-loop' | 'libuv' | 'hash-queue' | 'rss'

export function secondPoints (run: RunResult, pick: (sample: SecondSample) => number | null | undefined): XY[] {
  return run.seconds.map((sample) => ({ x: sample.t, y: pick(sample) ?? null }))
}

export function serverPoints (run: RunResult, pick: (sample: ServerSample) => number | null): XY[] {
  return run.server.map((sample) => ({ x: sample.t, y: pick(sample) }))
}

/** p50/p95/p99 of every request per second, and the /healthz p99 beside them (the service's own pulse). */
export function latencyOverTimeConfig (run: RunResult): LineConfig {
  return timeLineConfig([
    lineDataset('p50', secondPoints(run, (sample) => sample.all.latency.p50Ms), namedColour('p50')),
    lineDataset('p95', secondPoints(run, (sample) => sample.all.latency.p95Ms), namedColour('p95')),
    lineDataset('p99', secondPoints(run, (sample) => sample.all.latency.p99Ms), namedColour('p99')),
    lineDataset('/healthz p99', secondPoints(run, (sample) => sample.healthz?.p99Ms), namedColour('healthz'), { dashed: true }),
  ], { title: 'ms', unit: 'ms' })
}

/** Offered vs achieved iterations, failed requests and dropped arrivals per second; VUs on the right. */
export function throughputOverTimeConfig (run: RunResult): LineConfig {
  const closed = run.seconds.some((sample) => sample.vus !== null)
  const datasets: Array<ChartDataset<'line', XY[]>> = [
    lineDataset('offered', secondPoints(run, (sample) => sample.offered), namedColour('offered'), { dashed: true }),
    lineDataset('achieved', secondPoints(run, (sample) => sample.achieved), namedColour('achieved')),
    lineDataset('failed requests', secondPoints(run, (sample) => sample.all.requests - sample.all.ok), namedColour('failed')),
    lineDataset('dropped', secondPoints(run, (sample) => sample.dropped), namedColour('dropped')),
  ]
  if (closed) datasets.push(lineDataset('virtual users (right axis)', secondPoints(run, (sample) => sample.vus), namedColour('vus'), { dashed: true, rightAxis: true }))
  return timeLineConfig(datasets, { title: 'per second', unit: '/s', linear: true, ...(closed ? { rightTitle: 'virtual users' } : {}) })
}

export function mebibytes (bytes: number | null): number | null {
  return bytes === null ? null : bytes / 1048576
}

/** CPU and RSS of the whole process tree where the lab measured it (spawn, cluster), else of the process. */
export function treeOrProcess (run: RunResult, tree: (sample: ServerSample) => number | null, process: (sample: ServerSample) => number | null): (sample: ServerSample) => number | null {
  return run.server.some((sample) => tree(sample) !== null) ? tree : process
}

/** The one series per run that stands for a signal when strategies share a chart. */
export function primarySignal (run: RunResult, signal: ServerSignal): (sample: ServerSample) => number | null {
  switch (signal) {
    case 'cpu': return treeOrProcess(run, (sample) => sample.processTreeCpuCores, (sample) => sample.cpuCores)
    case 'event-loop': return (sample) => sample.eventLoopDelayP99Ms
    case 'libuv': return (sample) => sample.libuvCanaryMs
    case 'hash-queue': return (sample) => sample.hashQueued
    case 'rss': {
      const pick = treeOrProcess(run, (sample) => sample.processTreeRssBytes, (sample) => sample.rssBytes)
      return (sample) => mebibytes(pick(sample))
    }
  }
}

/** One strategy's line where every strategy shares a chart: its colour by run order, and saying so when it has no data. */
export function strategyDataset (label: string, points: XY[], index: number): ChartDataset<'line', XY[]> {
  const measured = points.some((point) => point.y !== null)
  return lineDataset(measured ? label : `${label} (not measured)`, points, seriesColour(index))
}

/** The series of a signal for one run that have data (a process tree only where there is one). */
export function signalDatasets (run: RunResult, signal: ServerSignal): Array<ChartDataset<'line', XY[]>> {
  return allSignalDatasets(run, signal).filter((dataset) => dataset.data.some((point) => point.y !== null))
}

export function allSignalDatasets (run: RunResult, signal: ServerSignal): Array<ChartDataset<'line', XY[]>> {
  switch (signal) {
    case 'cpu': return [
      lineDataset('service process', serverPoints(run, (sample) => sample.cpuCores), seriesColour(0)),
      lineDataset('process tree (children, workers)', serverPoints(run, (sample) => sample.processTreeCpuCores), seriesColour(1), { dashed: true }),
    ]
    case 'event-loop': return [
      lineDataset('p99', serverPoints(run, (sample) => sample.eventLoopDelayP99Ms), namedColour('p99')),
      lineDataset('max', serverPoints(run, (sample) => sample.eventLoopDelayMaxMs), namedColour('p95'), { dashed: true }),
    ]
    case 'libuv': return [lineDataset('canary', serverPoints(run, (sample) => sample.libuvCanaryMs), seriesColour(3))]
    case 'hash-queue': return [
      lineDataset('waiting', serverPoints(run, (sample) => sample.hashQueued), seriesColour(0)),
      lineDataset('running', serverPoints(run, (sample) => sample.hashRunning), seriesColour(2)),
      lineDataset('refused at admission per second', serverPoints(run, (sample) => sample.hashRejected), namedColour('failed'), { dashed: true }),
    ]
    case 'rss': return [
      lineDataset('service process', serverPoints(run, (sample) => mebibytes(sample.rssBytes)), seriesColour(0)),
      lineDataset('process tree (children, workers)', serverPoints(run, (sample) => mebibytes(sample.processTreeRssBytes)), seriesColour(1), { dashed: true }),
    ]
  }
}

export function signalAxis (result: LabResult, signal: ServerSignal): AxisSpec {
  switch (signal) {
    case 'cpu': return { title: 'cores', unit: 'cores', suggestedMax: result.machine.cpuBudget.cpus * 1.1, linear: true }
    case 'event-loop': return { title: 'ms', unit: 'ms' }
    case 'libuv': return { title: 'ms', unit: 'ms' }
    case 'hash-queue': return { title: 'hashes', unit: '', linear: true }
    case 'rss': return { title: 'MiB', unit: 'MiB', linear: true }
  }
}

/** A server signal over time: every series of one run, or one series per run (compare). */
export function serverSignalConfig (result: LabResult, signal: ServerSignal, runs: RunResult[]): LineConfig {
  const only = runs.length === 1 ? runs[0] : undefined
  const datasets = only !== undefined
    ? signalDatasets(only, signal)
    : runs.map((run, index) => strategyDataset(run.label, serverPoints(run, primarySignal(run, signal)), index))
  const budget = result.machine.cpuBudget.cpus
  const lines: ReferenceLine[] = signal === 'cpu' ? [{ axis: 'y', value: budget, label: `CPU budget: ${budget} cores`, colour: namedColour('limit') }] : []
  return timeLineConfig(datasets, signalAxis(result, signal), lines)
}
