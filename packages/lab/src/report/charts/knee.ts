/** Knee-search charts: latency and achieved throughput against the offered rate, the knee marked. */
import type { ChartDataset } from 'chart.js'
import type { KneeResult, KneeStep } from '../../result.js'
import { formatMs, formatRate } from '../format.js'
import { lineChartConfig, lineDataset, namedColour, type AxisSpec, type LineConfig, type ReferenceLine, type XY } from './common.js'

export function stepPoints (knee: KneeResult, pick: (step: KneeStep) => number | null): XY[] {
  return knee.steps.map((step) => ({ x: step.offeredPerSecond, y: pick(step) }))
}

/** Steps that held are dots, steps that failed are crosses: the reader sees where it broke. */
export function stepDataset (knee: KneeResult, label: string, pick: (step: KneeStep) => number | null, colour: string): ChartDataset<'line', XY[]> {
  return {
    ...lineDataset(label, stepPoints(knee, pick), colour),
    pointRadius: knee.steps.map((step) => step.held ? 3 : 6),
    pointStyle: knee.steps.map((step) => step.held ? 'circle' : 'crossRot'),
    pointBorderWidth: knee.steps.map((step) => step.held ? 1 : 2.5),
  }
}

export function kneeMarker (knee: KneeResult): ReferenceLine[] {
  return knee.kneePerSecond === null
    ? []
    : [{ axis: 'x', value: knee.kneePerSecond, label: `knee: ${formatRate(knee.kneePerSecond)}/s`, colour: '#222222' }]
}

export function rateLineConfig (datasets: Array<ChartDataset<'line', XY[]>>, axis: AxisSpec, lines: ReferenceLine[]): LineConfig {
  return lineChartConfig(datasets, { title: 'offered rate (arrivals per second)', fromZero: false }, axis, lines)
}

/** p50/p95/p99 of each step against its offered rate, with the p99 limit the search used. */
export function kneeLatencyConfig (knee: KneeResult): LineConfig {
  const limit = knee.criteria.p99LimitMs
  return rateLineConfig([
    stepDataset(knee, 'p50', (step) => step.latency.p50Ms, namedColour('p50')),
    stepDataset(knee, 'p95', (step) => step.latency.p95Ms, namedColour('p95')),
    stepDataset(knee, 'p99', (step) => step.latency.p99Ms, namedColour('p99')),
  ], { title: 'ms', unit: 'ms', suggestedMax: limit * 1.1 }, [
    ...kneeMarker(knee),
    { axis: 'y', value: limit, label: `p99 limit: ${formatMs(limit)} ms`, colour: namedColour('limit') },
  ])
}

/** Achieved against offered: on the diagonal the service keeps up; below the margin line a step fails. */
export function kneeThroughputConfig (knee: KneeResult): LineConfig {
  const offered = knee.steps.map((step) => step.offeredPerSecond)
  const ends = offered.length === 0 ? [] : [Math.min(...offered), Math.max(...offered)]
  const keepsUp = (share: number): XY[] => ends.map((rate) => ({ x: rate, y: rate * share }))
  return rateLineConfig([
    stepDataset(knee, 'achieved', (step) => step.achievedPerSecond, namedColour('achieved')),
    lineDataset('achieved = offered', keepsUp(1), namedColour('offered'), { dashed: true }),
    lineDataset(`holds above (offered × ${(1 - knee.criteria.throughputMargin).toFixed(2)})`, keepsUp(1 - knee.criteria.throughputMargin), namedColour('limit'), { dashed: true }),
  ], { title: 'achieved iterations per second', unit: '/s', linear: true, fromZero: false }, kneeMarker(knee))
}
