/**
 * The report: every line not imported, with its number and why, written as it is decided (so a
 * million rejected lines cost no memory), and the counts, collected into one summary that
 * `renderSummary` only formats.
 */
import { once } from 'node:events'
import type { Writable } from 'node:stream'
import type { RejectionCode } from './rejection.js'
import type { SourceHashFormat } from './source-hash.js'

export type LineOutcome =
  | { line: number, outcome: 'rejected', code: RejectionCode, reason: string, email?: string }
  | { line: number, outcome: 'already-present', email: string }

export interface ImportSummary {
  dryRun: boolean
  /** Lines read, blank ones included. */
  lines: number
  /** Accounts created (in a dry run: that would be created). */
  imported: number
  /** Lines whose email already has an account (or an earlier line of the file). */
  alreadyPresent: number
  rejected: number
  rejectedByCode: Partial<Record<RejectionCode, number>>
  importedByFormat: Partial<Record<SourceHashFormat, number>>
  /** Reset links queued for accounts imported without a password. */
  resetMails: number
  /** Whether already-present emails were looked up (a dry run without a database cannot). */
  checkedDatabase: boolean
  elapsedMs: number
}

/** How lines not imported are written: every one as JSON Lines (a report file), or the rejected ones as text (the terminal). */
export type ReportStyle = 'jsonl' | 'text'

export class ImportReport {
  private readonly counts: Omit<ImportSummary, 'dryRun' | 'checkedDatabase' | 'elapsedMs'> = {
    lines: 0, imported: 0, alreadyPresent: 0, rejected: 0, rejectedByCode: {}, importedByFormat: {}, resetMails: 0,
  }

  constructor (private readonly out: Writable, private readonly style: ReportStyle) {}

  lineRead (number: number): void {
    this.counts.lines = number
  }

  imported (format: SourceHashFormat): void {
    this.counts.imported += 1
    this.counts.importedByFormat[format] = (this.counts.importedByFormat[format] ?? 0) + 1
  }

  resetMailQueued (): void {
    this.counts.resetMails += 1
  }

  /** Counts and writes a line not imported; resolves once the output can take more (backpressure). */
  async notImported (outcome: LineOutcome): Promise<void> {
    if (outcome.outcome === 'rejected') {
      this.counts.rejected += 1
      this.counts.rejectedByCode[outcome.code] = (this.counts.rejectedByCode[outcome.code] ?? 0) + 1
    } else {
      this.counts.alreadyPresent += 1
    }
    const text = this.style === 'jsonl'
      ? `${JSON.stringify(outcome)}\n`
      : outcome.outcome === 'rejected' ? `line ${outcome.line}: ${outcome.code}: ${outcome.reason}\n` : ''
    if (text !== '' && !this.out.write(text)) await once(this.out, 'drain')
  }

  summary (dryRun: boolean, checkedDatabase: boolean, elapsedMs: number): ImportSummary {
    return { dryRun, checkedDatabase, elapsedMs, ...structuredClone(this.counts) }
  }
}

function counted (counts: Partial<Record<string, number>>): string {
  const entries = Object.entries(counts).filter(([, n]) => (n ?? 0) > 0)
  return entries.length === 0 ? '' : ` (${entries.map(([key, n]) => `${key} ${String(n)}`).join(', ')})`
}

/** The summary in words, for the terminal. */
export function renderSummary (summary: ImportSummary): string {
  const would = summary.dryRun ? 'would be imported' : 'imported'
  const rate = summary.elapsedMs > 0 ? Math.round(summary.lines / (summary.elapsedMs / 1000)) : 0
  return [
    `${summary.dryRun ? 'dry run, nothing written: ' : ''}${summary.lines} lines in ${(summary.elapsedMs / 1000).toFixed(1)} s (${rate} lines/s)`,
    `  ${would}: ${summary.imported}${counted(summary.importedByFormat)}`,
    `  already present: ${summary.alreadyPresent}${summary.checkedDatabase ? '' : ' (not looked up: no database)'}`,
    `  rejected: ${summary.rejected}${counted(summary.rejectedByCode)}`,
    `  reset links ${summary.dryRun ? 'that would be ' : ''}queued for accounts without a password: ${summary.resetMails}`,
    '',
  ].join('\n')
}
