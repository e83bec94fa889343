/**
 * The terminal report: plain aligned columns, no colours, lines under 160 characters.
 */
import type { LabResult, RunResult } from '../result.js'
import {
  describeErrors, describeGenerator, describeLatency, headerFacts, kneeCriteriaLine, kneeLine, saturationWarnings, serverFacts, type Fact,
} from './describe.js'
import { renderTextTable, tableLegend, wrapWords, type Table } from './table.js'
import { comparisonTable, endpointTable, kneeTable, phaseTable, referencesTitle, referenceTable, serviceTable } from './tables.js'

const lineWidthChars = 150

function factLines (facts: Fact[]): string[] {
  const labelWidth = Math.max(...facts.map((fact) => fact.label.length)) + 2
  return facts.flatMap((fact) => wrapWords(fact.value, lineWidthChars - labelWidth)
    .map((line, index) => `${index === 0 ? `${fact.label}:`.padEnd(labelWidth) : ' '.repeat(labelWidth)}${line}`))
}

function heading (title: string): string[] {
  return ['', title, '='.repeat(title.length)]
}

function tableWithLegend (table: Table): string[] {
  const legend = tableLegend(table)
  return [renderTextTable(table), ...(legend.length === 0 ? [] : ['', ...wrapWords(legend.join('; '), lineWidthChars, '')])]
}

function runSections (result: LabResult, run: RunResult): string[] {
  const phases = phaseTable(result, run)
  return [
    ...heading('Requests by endpoint'),
    renderTextTable(endpointTable(result, run)),
    ...wrapWords(`errors: ${describeErrors(run.all.errors)}`, lineWidthChars, '  '),
    ...(phases === null ? [] : [...heading('Requests by phase'), renderTextTable(phases)]),
    '',
    `/healthz during the run: ${describeLatency(run.healthz, 'probes')}`,
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
  return [
    ...heading('Comparison'),
    ...tableWithLegend(comparisonTable(result)),
    ...heading('Services'),
    renderTextTable(serviceTable(result)),
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
