/**
 * The terminal report: plain aligned columns, no colours, lines under 160 characters.
 */
import type { LabResult, RunResult } from '../result.js'
import {
  describeErrors, describeGenerator, describeHealthz, headerFacts, kneeCriteriaLine, kneeLine, saturationWarnings, serverFacts, type Fact,
} from './describe.js'
import {
  curveTable, databaseCostTable, databaseLimitTable, databaseLines, flowTitle, kneesTable, replicaPlanLine, replicaPlans, replicaTable, sizingFacts, sizingFlowsOf,
} from './sizing.js'
import { comparisonTable, cpuTable, endpointTable, kneeTable, phaseTable, referencesTitle, referenceTable, serviceTable, type Table } from './tables.js'

const columnGap = '  '

/** Word-wraps `text` to lines of at most `widthChars` (longer words stand alone); later lines start with `indent`. */
function wrapWords (text: string, widthChars: number, indent = ''): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/).filter((part) => part !== '')) {
    if (line === '') line = word
    else if (line.length + 1 + word.length <= widthChars) line += ` ${word}`
    else {
      lines.push(line)
      line = indent + word
    }
  }
  lines.push(line)
  return lines
}

/** Plain aligned columns, a dashed rule under the header; trailing spaces trimmed. */
function renderTextTable (table: Table): string {
  const { columns } = table
  const wrapped = table.rows.map((row) => columns.map((column, index) => {
    const cell = row[index] ?? ''
    return column.wrapAtChars !== undefined && cell.length > column.wrapAtChars ? wrapWords(cell, column.wrapAtChars) : [cell]
  }))
  const widths = columns.map((column, index) => Math.max(
    column.header.length,
    ...wrapped.map((cells) => Math.max(...(cells[index] ?? ['']).map((line) => line.length)))
  ))
  const line = (cells: string[]): string => cells.map((cell, index) => {
    return columns[index]?.align === 'right' ? cell.padStart(widths[index] ?? 0) : cell.padEnd(widths[index] ?? 0)
  }).join(columnGap).trimEnd()
  const rule = widths.map((width) => '-'.repeat(width)).join(columnGap)
  const out = [line(columns.map((column) => column.header)), rule]
  wrapped.forEach((cells, rowIndex) => {
    if (rowIndex === table.totalRow) out.push(rule)
    const height = Math.max(...cells.map((lines) => lines.length))
    for (let lineIndex = 0; lineIndex < height; lineIndex++) out.push(line(cells.map((lines) => lines[lineIndex] ?? '')))
  })
  return out.join('\n')
}

const lineWidthChars = 150

function factLines (facts: Fact[]): string[] {
  const labelWidth = Math.max(...facts.map((fact) => fact.label.length)) + 2
  return facts.flatMap((fact) => wrapWords(fact.value, lineWidthChars - labelWidth)
    .map((line, index) => `${index === 0 ? `${fact.label}:`.padEnd(labelWidth) : ' '.repeat(labelWidth)}${line}`))
}

function heading (title: string): string[] {
  return ['', title, '='.repeat(title.length)]
}

/** The table, then "header: description" for the columns that have one. */
function tableWithLegend (table: Table): string[] {
  const legend = table.columns.flatMap((column) => column.description === undefined ? [] : [`${column.header}: ${column.description}`])
  return [renderTextTable(table), ...(legend.length === 0 ? [] : ['', ...wrapWords(legend.join('; '), lineWidthChars, '')])]
}

function runSections (result: LabResult, run: RunResult): string[] {
  const phases = phaseTable(run)
  return [
    ...heading('Requests by endpoint'),
    renderTextTable(endpointTable(run)),
    ...wrapWords(`errors: ${describeErrors(run.all.errors)}`, lineWidthChars, '  '),
    ...(phases === null ? [] : [...heading('Requests by phase'), renderTextTable(phases)]),
    '',
    ...describeHealthz(run).map((line, index) => index === 0 ? `/healthz during the run: ${line}` : `  ${line}`),
    ...heading('Server'),
    ...factLines(serverFacts(run)),
    '',
    `load generator: ${describeGenerator(run)}`,
  ]
}

function kneeSections (result: LabResult): string[] {
  const { knee } = result
  if (knee === undefined) return ['(this knee result has no knee search)']
  return [
    ...heading('Knee search'),
    ...wrapWords(kneeCriteriaLine(knee), lineWidthChars, '  '),
    '',
    renderTextTable(kneeTable(knee)),
    '',
    kneeLine(knee),
  ]
}

function compareSections (result: LabResult): string[] {
  // Several scenarios: their endpoints differ, so each run's own table (a passkey sign-in is two requests).
  const endpointSections = result.scenarios === undefined ? [] : result.runs.flatMap((run) => [...heading(`Endpoints: ${run.label}`), renderTextTable(endpointTable(run))])
  return [
    ...heading('Comparison'),
    ...tableWithLegend(comparisonTable(result)),
    ...heading('CPU'),
    ...tableWithLegend(cpuTable(result)),
    ...endpointSections,
    ...heading('Services'),
    renderTextTable(serviceTable(result)),
  ]
}

function sizingSections (result: LabResult): string[] {
  const { sizing } = result
  if (sizing === undefined) return ['(this sizing result has no sizing)']
  const plans = replicaPlans(sizing)
  const limits = databaseLimitTable(sizing)
  return [
    ...heading('Knees'),
    ...tableWithLegend(kneesTable(sizing)),
    ...sizingFlowsOf(sizing).flatMap(({ deployment, flow }) => [...heading(`Overload curve: ${flowTitle(deployment, flow)}`), ...tableWithLegend(curveTable(flow))]),
    ...heading('The shared database'),
    ...tableWithLegend(databaseCostTable(sizing)),
    ...(limits === null ? [] : ['', renderTextTable(limits)]),
    ...databaseLines(sizing).flatMap((line) => ['', ...wrapWords(line, lineWidthChars)]),
    ...heading('Sizing'),
    ...wrapWords(replicaPlanLine(sizing), lineWidthChars),
    ...(plans === null ? [] : ['', ...tableWithLegend(replicaTable(plans))]),
    '',
    ...factLines(sizingFacts(result, sizing)),
  ]
}

function referenceSection (result: LabResult): string[] {
  if (result.references.length === 0) return []
  return [...heading(referencesTitle), renderTextTable(referenceTable(result, 'narrow'))]
}

function warningSection (result: LabResult): string[] {
  const loud = saturationWarnings(result).flatMap((warning) => wrapWords(`!!! ${warning}`, lineWidthChars, '    '))
  const others = result.warnings.flatMap((warning) => wrapWords(`- ${warning}`, lineWidthChars, '  '))
  if (loud.length === 0 && others.length === 0) return []
  return [...heading('Warnings'), ...loud, ...others]
}

/** The final terminal report of `tollbooth lab run | knee | compare`. */
export function renderText (result: LabResult): string {
  const first = result.runs[0]
  const body = result.command === 'compare'
    ? compareSections(result)
    : result.command === 'sizing'
      ? sizingSections(result)
      : [
          ...(result.command === 'knee' ? kneeSections(result) : []),
          ...(first === undefined ? ['(no run in this result)'] : runSections(result, first)),
        ]
  const title = `tollbooth lab ${result.command}: ${result.scenario.name}`
  return [
    title,
    '='.repeat(Math.min(title.length, lineWidthChars)),
    ...factLines(headerFacts(result)),
    ...body,
    ...referenceSection(result),
    ...warningSection(result),
    '',
  ].join('\n')
}
