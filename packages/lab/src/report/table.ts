/**
 * A table as data (headers and already formatted cells), and its three renderings:
 * aligned plain text for the terminal and an HTML <table>.
 */
import { escapeHtml } from './html-escape.js'

export interface TableColumn {
  header: string
  align: 'left' | 'right'
  /** A longer explanation: the HTML header's tooltip and the legend under text tables. */
  description?: string
  /** Prose: plain text wraps cells longer than this onto continuation lines; HTML lets them wrap. */
  wrapAtChars?: number
}

export interface Table {
  columns: TableColumn[]
  rows: string[][]
  /** Rows to emphasise (HTML only), by index. */
  emphasisedRows?: number[]
  /** A row that sums the others (drawn apart), by index. */
  totalRow?: number
}

const columnGap = '  '

/** Word-wraps `text` to lines of at most `widthChars` (longer words stand alone); later lines start with `indent`. */
export function wrapWords (text: string, widthChars: number, indent = ''): string[] {
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

function pad (text: string, widthChars: number, align: TableColumn['align']): string {
  return align === 'right' ? text.padStart(widthChars) : text.padEnd(widthChars)
}

/** Plain aligned columns, a dashed rule under the header; trailing spaces trimmed. */
export function renderTextTable (table: Table): string {
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
    const column = columns[index]
    return column === undefined ? cell : pad(cell, widths[index] ?? 0, column.align)
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

/** An HTML table in a scrollable wrapper (narrow screens), numbers right-aligned. */
export function renderHtmlTable (table: Table, caption: string): string {
  const alignClass = (column: TableColumn | undefined): string => {
    if (column?.align === 'right') return ' class="num"'
    return column?.wrapAtChars === undefined ? '' : ' class="prose"'
  }
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

/** "header: description" lines for the columns that have one (the plain-text legend). */
export function tableLegend (table: Table): string[] {
  return table.columns.flatMap((column) => column.description === undefined ? [] : [`${column.header}: ${column.description}`])
}
