/**
 * `tollbooth users import`: the file's lines are parsed as they are read and written in batches,
 * one batch in the database while the next is parsed, and reading waits for both (backpressure):
 * memory holds two batches whatever the file's size. Every line ends imported, already present or
 * rejected with its reason; a database fault stops the import after the batches already committed,
 * and running the same file again finishes it (the committed lines are then already present).
 */
import { performance } from 'node:perf_hooks'
import type pg from 'pg'
import type { FirebaseHashParams, StoredMemoryBound } from '../../hashing/index.js'
import { ImportBatchWriter, type PendingLine, type ResetMailSettings, type WriteOutcome } from './batch-writer.js'
import type { ImportReport, ImportSummary } from './import-report.js'
import { parseImportLine } from './import-line.js'
import { fileLines } from './lines.js'
import { LineRejected } from './rejection.js'

export const defaultImportBatchSize = 2000
/** Far above any account's line; a longer one is skipped, never held whole. */
const maxImportLineBytes = 64 * 1024

export interface ImportUsersOptions {
  /** The JSON Lines file's bytes. */
  input: AsyncIterable<Buffer | string>
  /** Undefined: only a dry run, which then cannot tell which emails are already present. */
  db: pg.Pool | undefined
  dryRun: boolean
  report: ImportReport
  firebase?: FirebaseHashParams | undefined
  /** The running pool's share of memory a verify may hold (hashing's `storedMemoryBound`); undefined: the fixed bounds alone. */
  memoryBound?: StoredMemoryBound | undefined
  /** Undefined: accounts without a password get no mail. */
  resetMail?: ResetMailSettings | undefined
  batchSize?: number
}

export async function importUsers (options: ImportUsersOptions): Promise<ImportSummary> {
  const started = performance.now()
  const { report } = options
  const batchSize = options.batchSize ?? defaultImportBatchSize
  const context = { firebase: options.firebase, memoryBound: options.memoryBound }
  const writer = new ImportBatchWriter({ db: options.db, dryRun: options.dryRun, resetMail: options.resetMail })
  const settle = async (outcomes: WriteOutcome[]): Promise<void> => {
    for (const written of outcomes) {
      const { line } = written
      if (written.outcome === 'imported') {
        report.imported(line.format)
        if (written.resetMail) report.resetMailQueued()
      } else if (written.outcome === 'already-present') {
        await report.notImported({ line: line.number, outcome: 'already-present', email: line.user.email })
      } else {
        await report.notImported({ line: line.number, outcome: 'rejected', code: 'database_refused', reason: written.reason, email: line.user.email })
      }
    }
  }
  let batch: PendingLine[] = []
  let inFlight: Promise<void> = Promise.resolve()
  const send = async (): Promise<void> => {
    const full = batch
    batch = []
    // One batch in the database at a time: the next waits here, and so does the reading.
    await inFlight
    inFlight = writer.write(full).then(settle)
    // Not awaited now, but never unobserved: its fault is thrown by the next await of inFlight.
    inFlight.catch(() => {})
  }
  for await (const { number, text } of fileLines(options.input, maxImportLineBytes)) {
    report.lineRead(number)
    if (text === undefined) {
      await report.notImported({ line: number, outcome: 'rejected', code: 'line_too_long', reason: `the line is longer than ${maxImportLineBytes} bytes` })
      continue
    }
    if (text.trim() === '') continue
    try {
      const parsed = parseImportLine(text, context)
      batch.push({ number, user: parsed.user, format: parsed.format })
    } catch (err) {
      if (!(err instanceof LineRejected)) throw err
      await report.notImported({ line: number, outcome: 'rejected', code: err.code, reason: err.reason })
      continue
    }
    if (batch.length >= batchSize) await send()
  }
  if (batch.length > 0) await send()
  await inFlight
  return report.summary(options.dryRun, options.db !== undefined, performance.now() - started)
}
