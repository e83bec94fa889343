/**
 * Finds every `<canvas data-chart>` the HTML laid out, builds its Chart.js configuration from
 * the embedded result, and draws it (run by charts/page.ts). The DOM is typed here by the little
 * it uses, because the project compiles without the DOM library.
 */
import type { ChartConfiguration } from 'chart.js'
import type { LabResult } from '../../result.js'
import type { AnyChartConfig } from './common.js'
import { compareBarConfig, compareOverTimeConfig } from './compare.js'
import { kneeLatencyConfig, kneeThroughputConfig } from './knee.js'
import { latencyOverTimeConfig, serverSignalConfig, throughputOverTimeConfig } from './time.js'

export type ChartKind =
  | 'latency' | 'throughput'
  | 'server-cpu' | 'server-event-loop' | 'server-libuv' | 'server-hash-queue' | 'server-rss'
  | 'knee-latency' | 'knee-throughput'
  | 'compare-p99' | 'compare-achieved'
  | 'bar-throughput' | 'bar-latency' | 'bar-healthz' | 'bar-delay' | 'bar-cpu' | 'bar-rss' | 'bar-errors'

/** A chart the page draws: its kind and, for one run's charts, the run's index (else every run). */
export interface ChartSpec {
  kind: ChartKind
  run: number | null
}

/** The configuration of one chart, or null when the result has nothing for it (no such run, no knee). */
export function chartConfig (result: LabResult, spec: ChartSpec): AnyChartConfig | null {
  const run = spec.run === null ? undefined : result.runs[spec.run]
  const runs = run === undefined ? result.runs : [run]
  switch (spec.kind) {
    case 'latency': return run === undefined ? null : latencyOverTimeConfig(run)
    case 'throughput': return run === undefined ? null : throughputOverTimeConfig(run)
    case 'server-cpu': return serverSignalConfig(result, 'cpu', runs)
    case 'server-event-loop': return serverSignalConfig(result, 'event-loop', runs)
    case 'server-libuv': return serverSignalConfig(result, 'libuv', runs)
    case 'server-hash-queue': return serverSignalConfig(result, 'hash-queue', runs)
    case 'server-rss': return serverSignalConfig(result, 'rss', runs)
    case 'knee-latency': return result.knee === undefined ? null : kneeLatencyConfig(result.knee)
    case 'knee-throughput': return result.knee === undefined ? null : kneeThroughputConfig(result.knee)
    case 'compare-p99': return compareOverTimeConfig(result, 'p99')
    case 'compare-achieved': return compareOverTimeConfig(result, 'achieved')
    case 'bar-throughput': return compareBarConfig(result, 'throughput')
    case 'bar-latency': return compareBarConfig(result, 'latency')
    case 'bar-healthz': return compareBarConfig(result, 'healthz')
    case 'bar-delay': return compareBarConfig(result, 'delay')
    case 'bar-cpu': return compareBarConfig(result, 'cpu')
    case 'bar-rss': return compareBarConfig(result, 'rss')
    case 'bar-errors': return compareBarConfig(result, 'errors')
  }
}

interface PageElement {
  dataset: Record<string, string | undefined>
  textContent: string | null
  setAttribute: (name: string, value: string) => void
}

export interface ReportPage {
  getElementById: (id: string) => PageElement | null
  querySelectorAll: (selectors: string) => Iterable<PageElement>
  body: PageElement
}

/** Chart.js's constructor, as the page's global `Chart`. */
export interface ChartConstructor {
  new (canvas: PageElement, config: ChartConfiguration): unknown
  defaults: { font: { family: string, size: number }, color: string }
}

/** Draws every chart of the page; `data-charts-drawn` on <body> says how many when it is done. */
export function drawCharts (page: ReportPage, ChartClass: ChartConstructor): void {
  const embedded = page.getElementById('lab-result')?.textContent
  if (embedded === null || embedded === undefined) throw new Error('the report has no embedded result (#lab-result)')
  const result = JSON.parse(embedded) as LabResult
  ChartClass.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'
  ChartClass.defaults.font.size = 12
  ChartClass.defaults.color = '#3a3a3a'
  let drawn = 0
  let failed = 0
  for (const canvas of page.querySelectorAll('canvas[data-chart]')) {
    const run = canvas.dataset.run
    const spec: ChartSpec = { kind: canvas.dataset.chart as ChartKind, run: run === undefined ? null : Number(run) }
    try {
      const config = chartConfig(result, spec)
      if (config === null) throw new Error('nothing to draw')
      // eslint-disable-next-line no-new -- Chart.js draws into the canvas it is given
      new ChartClass(canvas, config as ChartConfiguration)
      drawn++
    } catch (err) {
      failed++
      canvas.setAttribute('data-chart-error', String(err))
      console.error(`chart ${spec.kind} (run ${String(spec.run)}) failed:`, err)
    }
  }
  page.body.setAttribute('data-charts-drawn', String(drawn))
  page.body.setAttribute('data-charts-failed', String(failed))
}
