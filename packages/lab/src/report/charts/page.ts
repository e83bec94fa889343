/**
 * The report page's script: draws every chart from the embedded result. Compiled on its own
 * (tsconfig.page.json) into one file that report.html inlines; the project compiles without
 * the DOM library, so the page's globals are typed by the little drawCharts uses.
 */
import { drawCharts, type ChartConstructor, type ReportPage } from './draw.js'

declare const document: ReportPage
declare const Chart: ChartConstructor

drawCharts(document, Chart)
