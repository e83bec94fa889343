/**
 * The report's charts as the HTML sees them: which charts a result calls for (catalogue.ts). The
 * drawing itself happens in the page (page.ts, compiled apart for the browser).
 */
export { comparisonBarCharts, comparisonOverTimeCharts, kneeCharts, runOverTimeCharts, serverCharts, sizingCurveCharts, strategyCharts, type ChartGroup } from './catalogue.js'
