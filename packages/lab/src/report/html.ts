/**
 * The HTML report: one self-contained file (no network at view time: Chart.js, the styles and
 * the result are inline, and a Content-Security-Policy forbids anything else). Tables are
 * rendered here; charts are drawn in the page from the embedded result by the chart modules.
 */
import type { LabResult, RunResult } from '../result.js'
import { comparisonBarCharts, comparisonOverTimeCharts, kneeCharts, runOverTimeCharts, serverCharts, sizingCurveCharts, strategyCharts, type ChartGroup } from './charts/index.js'
import {
  describeErrors, describeGenerator, describeHealthz, headerFacts, kneeCriteriaLine, kneeLine, saturationWarnings, serverFacts, type Fact,
} from './describe.js'
import {
  curveTable, databaseCostTable, databaseLimitTable, databaseLines, flowTitle, kneesTable, replicaPlanLine, replicaPlans, replicaTable, sizingFacts, sizingFlowsOf,
} from './sizing.js'
import { comparisonTable, cpuTable, endpointTable, kneeTable, phaseTable, referencesTitle, referenceTable, serviceTable, type Table, type TableColumn } from './tables.js'

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text and attribute values (always double-quoted): where the result's attacker-influenced strings (names, labels, settings, errors) meet HTML. */
function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, (char) => entities[char] ?? char)
}

/**
 * JSON for `<script type="application/json">`: with `<`, `>` and `&` as \u escapes no string
 * can close the element or open a comment, and U+2028/U+2029 cannot end a line in older parsers.
 * `JSON.parse(element.textContent)` returns the value unchanged.
 */
export function jsonForScriptElement (value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * JavaScript source for an inline `<script>`: our code and Chart.js's contain no `</script` or `<!--`, and this
 * makes sure of it. Were they there, they would be in string or regular-expression literals, where `<\/` means `</`.
 */
function scriptForInlineElement (source: string): string {
  return source.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\x21--')
}

export interface HtmlAssets {
  /** The page with its stylesheet and a {{slot}} for each part (template.html). */
  template: string
  /** Chart.js's UMD build (chart.umd.min.js), inlined as is. */
  chartJs: string
  /** The compiled chart code (charts/page.ts) with its module loader. */
  pageScript: string
}

export const contentSecurityPolicy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"

/** An HTML table in a scrollable wrapper (narrow screens), numbers right-aligned. */
function renderHtmlTable (table: Table, caption: string): string {
  const alignClass = (column: TableColumn): string => column.align === 'right' ? ' class="num"' : column.wrapAtChars === undefined ? '' : ' class="prose"'
  const head = table.columns.map((column) => {
    const title = column.description === undefined ? '' : ` title="${escapeHtml(column.description)}"`
    return `<th scope="col"${alignClass(column)}${title}>${escapeHtml(column.header)}</th>`
  }).join('')
  const body = table.rows.map((row, rowIndex) => {
    const classes = [
      ...(table.emphasisedRows?.includes(rowIndex) === true ? ['emphasised'] : []),
      ...(rowIndex === table.totalRow ? ['total'] : []),
    ]
    const rowClass = classes.length === 0 ? '' : ` class="${classes.join(' ')}"`
    const cells = table.columns.map((column, index) => {
      const cell = escapeHtml(row[index] ?? '')
      return index === 0 ? `<th scope="row">${cell}</th>` : `<td${alignClass(column)}>${cell}</td>`
    }).join('')
    return `<tr${rowClass}>${cells}</tr>`
  }).join('\n')
  return `<div class="table-wrap"><table>\n<caption>${escapeHtml(caption)}</caption>\n<thead><tr>${head}</tr></thead>\n<tbody>\n${body}\n</tbody>\n</table></div>`
}

function factList (facts: Fact[]): string {
  return `<dl class="facts">\n${facts.map((fact) => `<dt>${escapeHtml(fact.label)}</dt><dd>${escapeHtml(fact.value)}</dd>`).join('\n')}\n</dl>`
}

function paragraph (text: string, className?: string): string {
  return `<p${className === undefined ? '' : ` class="${className}"`}>${escapeHtml(text)}</p>`
}

function section (id: string, heading: string, body: string[]): string {
  return `<section id="${id}" aria-labelledby="${id}-heading">\n<h2 id="${id}-heading">${escapeHtml(heading)}</h2>\n${body.join('\n')}\n</section>`
}

function chartGroup (group: ChartGroup): string {
  const titleLevel = group.heading === null ? 3 : 4
  const figures = group.panels.map((panel) => {
    const run = panel.run === null ? '' : ` data-run="${panel.run}"`
    const label = `${panel.title}: ${panel.description}`
    return `<figure class="chart">
<h${titleLevel} id="${panel.id}-title">${escapeHtml(panel.title)}</h${titleLevel}>
${paragraph(panel.description)}
<div class="canvas-box"><canvas id="${panel.id}" data-chart="${panel.kind}"${run} role="img" aria-label="${escapeHtml(label)}">${escapeHtml(label)}</canvas></div>
</figure>`
  })
  return [
    group.heading === null ? '' : `<h3>${escapeHtml(group.heading)}</h3>`,
    figures.length === 0 ? '' : `<div class="charts">\n${figures.join('\n')}\n</div>`,
    group.notMeasured.length === 0 ? '' : paragraph(`Not measured, so not drawn: ${group.notMeasured.join(', ')}.`, 'not-measured'),
  ].filter((part) => part !== '').join('\n')
}

function warningCallouts (result: LabResult): string {
  const loud = saturationWarnings(result).map((warning) => `<div class="callout alarm" role="alert">${escapeHtml(warning)}</div>`)
  const others = result.warnings.length === 0
    ? []
    : [`<div class="callout warn"><strong>Warnings</strong><ul>${result.warnings.map((warning) => `<li>${escapeHtml(warning)}</li>`).join('')}</ul></div>`]
  return [...loud, ...others].join('\n')
}

function runSections (result: LabResult, run: RunResult): string[] {
  const phases = phaseTable(run)
  return [
    section('requests', 'Requests', [
      renderHtmlTable(endpointTable(run), 'Whole run, by endpoint; latency in ms'),
      paragraph(`Errors: ${describeErrors(run.all.errors)}.`),
      ...(phases === null ? [] : [renderHtmlTable(phases, 'By phase, in the order they ran; latency in ms')]),
      paragraph(`/healthz during the load: ${describeHealthz(run).join('; ')}.`),
    ]),
    section('over-time', 'Over time', [chartGroup(runOverTimeCharts(result))]),
    section('server', 'Server signals', [
      factList([...serverFacts(run), { label: 'load generator', value: describeGenerator(run) }]),
      chartGroup(serverCharts(result)),
    ]),
  ]
}

function kneeSection (result: LabResult): string[] {
  const { knee } = result
  if (knee === undefined) return []
  return [section('knee', 'Knee search', [
    paragraph(kneeLine(knee), 'headline'),
    paragraph(kneeCriteriaLine(knee)),
    renderHtmlTable(kneeTable(knee), 'One constant-rate step per row; latency in ms; the knee step is highlighted'),
    chartGroup(kneeCharts(result)),
  ])]
}

function referenceBlock (result: LabResult): string {
  if (result.references.length === 0) return ''
  return `<div class="theirs" id="references">
<h3>${escapeHtml(referencesTitle)}</h3>
${paragraph('What the seed articles reported for the setups our strategies reproduce: their machines, their load, their numbers. They show the shape to expect, not a measurement of this service.')}
${renderHtmlTable(referenceTable(result, 'wide'), `${referencesTitle}; latency in ms`)}
</div>`
}

function compareSections (result: LabResult): string[] {
  return [
    section('comparison', 'Comparison', [
      renderHtmlTable(comparisonTable(result), 'Measured here: one row per strategy, in the order they ran; latency in ms (hover a header for its meaning)'),
      renderHtmlTable(cpuTable(result), 'What each run\'s successes cost in CPU: the service\'s and the load generator\'s, on the same machine'),
      referenceBlock(result),
    ]),
    section('side-by-side', 'Strategies side by side', [chartGroup(comparisonBarCharts(result))]),
    section('every-strategy-over-time', 'Every strategy over time', [chartGroup(comparisonOverTimeCharts(result))]),
    section('each-strategy', 'Each strategy over time', strategyCharts(result).map(chartGroup)),
    section('services', 'Services', [renderHtmlTable(serviceTable(result), 'The service each strategy ran as')]),
  ]
}

/** `sizing`: the plan first (what the reader came for), then the knees, the curves, the database, and each flow over time. */
function sizingSections (result: LabResult): string[] {
  const { sizing } = result
  if (sizing === undefined) return []
  const plans = replicaPlans(sizing)
  const limits = databaseLimitTable(sizing)
  const curves = sizingCurveCharts(result)
  return [
    section('sizing', 'Sizing', [
      paragraph(replicaPlanLine(sizing), 'headline'),
      ...(plans === null ? [] : [renderHtmlTable(replicaTable(plans), 'Replicas for the peak, by replica size (hover a header for its meaning)')]),
      factList(sizingFacts(result, sizing)),
    ]),
    section('knees', 'Knees', [renderHtmlTable(kneesTable(sizing), 'One knee search per deployment and flow, steps of constant rate from 0.7 of the closed-loop estimate')]),
    section('curves', 'Overload curves', sizingFlowsOf(sizing).flatMap(({ deployment, flow }, index) => [
      `<h3>${escapeHtml(flowTitle(deployment, flow))}</h3>`,
      renderHtmlTable(curveTable(flow), `${flow.endpoint}: constant-rate steps at multiples of the knee (${formatRateText(flow.knee.kneePerSecond)}), naive clients then polite; latency in ms of the arrivals that succeeded, from the arrival; the 1× rows are highlighted`),
      ...(curves[index] === undefined ? [] : [chartGroup(curves[index])]),
    ])),
    section('database', 'The shared database', [
      renderHtmlTable(databaseCostTable(sizing), 'What PostgreSQL spent per successful request'),
      ...(limits === null ? [] : [renderHtmlTable(limits, 'The peak of logins at which the database, not the replicas, is the limit')]),
      ...databaseLines(sizing).map((line) => paragraph(line)),
    ]),
    section('each-flow', 'Each flow over time', strategyCharts(result).map(chartGroup)),
    section('services', 'Services', [renderHtmlTable(serviceTable(result), 'The service of each flow\'s run')]),
  ]
}

const formatRateText = (rate: number | null): string => (rate === null ? 'no knee' : `knee ${rate}/s`)

function body (result: LabResult): string[] {
  const first = result.runs[0]
  if (result.command === 'compare') return compareSections(result)
  if (result.command === 'sizing') return sizingSections(result)
  return [
    ...(result.command === 'knee' ? kneeSection(result) : []),
    ...(first === undefined ? [] : runSections(result, first)),
    ...(result.references.length === 0 ? [] : [section('their-figures', 'The articles', [referenceBlock(result)])]),
  ]
}

/** The whole report page of one result: the template (template.html) with its slots filled. */
export function renderHtml (result: LabResult, assets: HtmlAssets): string {
  const slots: Record<string, string> = {
    csp: contentSecurityPolicy,
    title: escapeHtml(`tollbooth lab ${result.command}: ${result.scenario.name}`),
    header: [
      `<h1><span class="command">tollbooth lab ${escapeHtml(result.command)} ·</span> ${escapeHtml(result.scenario.name)}</h1>`,
      paragraph(result.scenario.description, 'lede'),
      warningCallouts(result),
      factList(headerFacts(result)),
    ].join('\n'),
    main: body(result).join('\n'),
    footer: escapeHtml(`${result.schema}, created ${result.createdAt}. Every figure above is a pure function of the embedded result.json; the articles' figures are theirs.`),
    result: jsonForScriptElement(result),
    chartJs: scriptForInlineElement(assets.chartJs),
    pageScript: scriptForInlineElement(assets.pageScript),
  }
  // A function, not a replacement string: `$` in Chart.js's source must stay as it is.
  return assets.template.replace(/\{\{(\w+)\}\}/g, (slot, name: string) => slots[name] ?? slot)
}
