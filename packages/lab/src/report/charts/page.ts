/**
 * The report page's script: finds every `<canvas data-chart>` the HTML laid out, builds its
 * Chart.js configuration from the embedded result, and draws it; `data-charts-drawn` on <body>
 * says how many when it is done. Compiled on its own with the DOM library (tsconfig.page.json;
 * the package's build leaves it out) into one file that report.html inlines.
 */
import type { Chart as ChartJs, ChartConfiguration } from 'chart.js'
import type { LabResult } from '../../result.js'
import { chartConfig, type ChartKind, type ChartSpec } from './catalogue.js'

/** Chart.js's UMD build, as the page's global `Chart`. */
declare const Chart: typeof ChartJs

const embedded = document.getElementById('lab-result')?.textContent
if (embedded == null) throw new Error('the report has no embedded result (#lab-result)')
const result = JSON.parse(embedded) as LabResult
Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'
Chart.defaults.font.size = 12
Chart.defaults.color = '#3a3a3a'
let drawn = 0
let failed = 0
for (const canvas of document.querySelectorAll<HTMLCanvasElement>('canvas[data-chart]')) {
  const run = canvas.dataset.run
  const spec: ChartSpec = { kind: canvas.dataset.chart as ChartKind, run: run === undefined ? null : Number(run) }
  try {
    const config = chartConfig(result, spec)
    if (config === null) throw new Error('nothing to draw')
    // eslint-disable-next-line no-new -- Chart.js draws into the canvas it is given
    new Chart(canvas, config as ChartConfiguration)
    drawn++
  } catch (err) {
    failed++
    canvas.setAttribute('data-chart-error', String(err))
    console.error(`chart ${spec.kind} (run ${String(spec.run)}) failed:`, err)
  }
}
document.body.setAttribute('data-charts-drawn', String(drawn))
document.body.setAttribute('data-charts-failed', String(failed))
