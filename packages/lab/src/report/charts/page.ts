/**
 * The report page's script: finds every `<canvas data-chart>` the HTML laid out, builds its
 * Chart.js configuration from the embedded result, and draws it. Compiled on its own
 * (tsconfig.page.json) into one file that report.html inlines. The DOM is typed here by the
 * little it uses, because the project compiles without the DOM library.
 */
import type { ChartConfiguration } from 'chart.js'
import type { LabResult } from '../../result.js'
import { chartConfig, type ChartKind, type ChartSpec } from './catalogue.js'

interface PageElement {
  dataset: Record<string, string | undefined>
  textContent: string | null
  setAttribute: (name: string, value: string) => void
}

interface ReportPage {
  getElementById: (id: string) => PageElement | null
  querySelectorAll: (selectors: string) => Iterable<PageElement>
  body: PageElement
}

/** Chart.js's constructor, as the page's global `Chart`. */
interface ChartConstructor {
  new (canvas: PageElement, config: ChartConfiguration): unknown
  defaults: { font: { family: string, size: number }, color: string }
}

/** Draws every chart of the page; `data-charts-drawn` on <body> says how many when it is done. */
function drawCharts (page: ReportPage, ChartClass: ChartConstructor): void {
  const embedded = page.getElementById('lab-result')?.textContent
  if (embedded == null) throw new Error('the report has no embedded result (#lab-result)')
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

declare const document: ReportPage
declare const Chart: ChartConstructor

drawCharts(document, Chart)
