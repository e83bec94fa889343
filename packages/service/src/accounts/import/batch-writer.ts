/**
 * The batching writer: a batch of parsed lines is one transaction (the accounts, then the reset
 * links of those without a password), so a batch is written whole or not at all. Should the
 * database refuse a row the line checks let through, the batch is written again line by line, each
 * its own transaction, so one bad line never costs the others. A dry run only reads: which emails
 * already have an account.
 */
import type pg from 'pg'
import { existingEmails, insertImportedUsers, queueImportResetMails, withTransaction, type ImportedUser, type ImportResetMail } from '../../db/index.js'
import { accountPage, importedAccountMail, tokenStandIn } from '../../mail/index.js'
import { noPasswordHash } from '../../hashing/index.js'
import type { SourceHashFormat } from './source-hash.js'

export interface PendingLine {
  number: number
  user: ImportedUser
  format: SourceHashFormat
}

export type WriteOutcome =
  | { line: PendingLine, outcome: 'imported', resetMail: boolean }
  | { line: PendingLine, outcome: 'already-present' }
  | { line: PendingLine, outcome: 'refused', reason: string }

/** How accounts without a password get their link: the page it opens and how long it works. */
export interface ResetMailSettings {
  publicUrl: string
  ttlSeconds: number
}

export interface BatchWriterOptions {
  /** Undefined: a dry run with no database (nothing is looked up). */
  db: pg.Pool | undefined
  dryRun: boolean
  /** Undefined: no mail for accounts without a password. */
  resetMail: ResetMailSettings | undefined
}

/** A refusal of the data itself (SQLSTATE classes 22 and 23), not of the connection. */
function isDataRefusal (err: unknown): err is Error & { code: string } {
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code)
}

export class ImportBatchWriter {
  constructor (private readonly options: BatchWriterOptions) {}

  /** Each line's outcome, in the batch's order. */
  async write (batch: readonly PendingLine[]): Promise<WriteOutcome[]> {
    const { db, dryRun } = this.options
    if (dryRun) return await this.lookUp(batch)
    if (db === undefined) throw new TypeError('an import that writes needs a database')
    try {
      return await withTransaction(db, async (client) => await this.insert(client, batch))
    } catch (err) {
      if (!isDataRefusal(err) || batch.length === 1) {
        if (isDataRefusal(err)) return [{ line: batch[0] as PendingLine, outcome: 'refused', reason: `${err.code}: ${err.message}`.slice(0, 300) }]
        throw err
      }
      const outcomes: WriteOutcome[] = []
      for (const line of batch) outcomes.push(...await this.write([line]))
      return outcomes
    }
  }

  private async insert (client: pg.PoolClient, batch: readonly PendingLine[]): Promise<WriteOutcome[]> {
    const inserted = await insertImportedUsers(client, batch.map((line) => line.user))
    const outcomes = this.decide(batch, (email) => inserted.has(email))
    const resets: ImportResetMail[] = []
    const settings = this.options.resetMail
    if (settings !== undefined) {
      const page = accountPage(settings.publicUrl, 'reset-password')
      for (const outcome of outcomes) {
        if (outcome.outcome !== 'imported' || !outcome.resetMail) continue
        const { email } = outcome.line.user
        const userId = inserted.get(email) ?? ''
        resets.push({ userId, ttlSeconds: settings.ttlSeconds, mail: importedAccountMail(email, { url: page, tokenHash: tokenStandIn() }, settings.ttlSeconds) })
      }
    }
    await queueImportResetMails(client, resets)
    return outcomes
  }

  /** A dry run: the lines whose email has an account are already present; nothing is written. */
  private async lookUp (batch: readonly PendingLine[]): Promise<WriteOutcome[]> {
    const db = this.options.db
    const present = db === undefined ? new Set<string>() : await existingEmails(db, batch.map((line) => line.user.email))
    return this.decide(batch, (email) => !present.has(email))
  }

  /** The first line of an email the database took is imported; the rest of the batch's lines of it are already present. */
  private decide (batch: readonly PendingLine[], taken: (email: string) => boolean): WriteOutcome[] {
    const claimed = new Set<string>()
    const mails = this.options.resetMail !== undefined
    return batch.map((line) => {
      const { email, passwordHash } = line.user
      if (!taken(email) || claimed.has(email)) return { line, outcome: 'already-present' }
      claimed.add(email)
      return { line, outcome: 'imported', resetMail: mails && passwordHash === noPasswordHash }
    })
  }
}
