/**
 * Sends what the outbox holds. Woken right after a request commits mail, and polls every
 * `pollIntervalMs` for the rest (retries come due, rows of a replica that stopped). Each mail is
 * claimed just before its send and leased for that one send (db/mail-outbox.ts), so replicas never
 * send one twice, however slow the SMTP server. Closing finishes the send in progress only. A
 * failed send is retried after `retryDelayMs`, doubled per attempt (at most an hour), until
 * `maxAttempts`; the log names a message by id and kind, never its link.
 *
 * Without a transport (TOLLBOOTH_SMTP_URL unset) each message is written to the log and kept as
 * `logged`: with its text when `logLinks` says so (development), else named only and its text
 * dropped, since a live link in a deployment's log hands the account to whoever reads it.
 */
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { claimDueMail, claimForLog, clearLoggedTexts, markAttemptFailed, markSent, releaseClaim, type ClaimedMail } from '../db/index.js'
import { RetryWakeups } from './retry-wakeups.js'
import type { MailTransport } from './transport.js'

export interface MailDispatcherOptions {
  db: pg.Pool
  log: FastifyBaseLogger
  /** Undefined: log mode. */
  transport: MailTransport | undefined
  /** Log mode: whether the log (and the outbox row) keeps a mail's text, its link included. */
  logLinks: boolean
  maxAttempts: number
  retryDelayMs: number
  pollIntervalMs: number
  /** Messages claimed per statement in log mode (SMTP mode claims one at a time). */
  batchSize?: number
  /** How long a claimed message is reserved for its one send (longer than any send can take). */
  leaseMs?: number
}

const maxRetryDelayMs = 3_600_000

export class MailDispatcher {
  readonly mode: 'smtp' | 'log'
  private timer: NodeJS.Timeout | undefined
  /** Extra wake-ups for retries due before the next poll. */
  private readonly retries = new RetryWakeups(() => { this.wake() })
  private running: Promise<void> | undefined
  private again = false
  private closed = false
  private started = false
  private readonly batchSize: number
  private readonly leaseMs: number
  /** Log mode without links: the texts logged before (with links) are cleared at the first run. */
  private loggedTextsCleared = false

  constructor (private readonly options: MailDispatcherOptions) {
    this.mode = options.transport === undefined ? 'log' : 'smtp'
    this.batchSize = options.batchSize ?? 20
    this.leaseMs = options.leaseMs ?? 120_000
  }

  /** Starts polling; the first look is at the first poll, so a start takes no extra database connection. */
  start (): void {
    if (this.started || this.closed) return
    this.started = true
    if (this.options.transport !== undefined) {
      this.options.log.info({ smtpServer: this.options.transport.server }, 'mail is sent through the SMTP server')
    } else {
      this.options.log.warn(this.options.logLinks
        ? 'TOLLBOOTH_SMTP_URL is unset: mail is not sent but written to the log (links included) and kept in the outbox; set it to send mail'
        : 'TOLLBOOTH_SMTP_URL is unset: mail is not sent, and its links are not logged (TOLLBOOTH_MAIL_LOG_LINKS): verification and password-reset mails are lost; set it to send mail')
    }
    this.schedule(this.options.pollIntervalMs)
  }

  /** Looks for due mail now (after a commit that queued some); coalesced with a run in progress. */
  wake (): void {
    if (!this.started || this.closed) return
    if (this.running !== undefined) {
      this.again = true
      return
    }
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.running = this.run().finally(() => {
      this.running = undefined
      this.schedule(this.options.pollIntervalMs)
    })
  }

  /** Stops polling and waits for the send under way; mail not yet claimed stays pending. Timers are not unref'd, so a leak shows. */
  async close (): Promise<void> {
    this.closed = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.retries.close()
    await this.running
    this.options.transport?.close()
  }

  private schedule (delayMs: number): void {
    if (this.closed) return
    if (this.again) {
      this.again = false
      this.wake()
      return
    }
    // The global setTimeout (not timers/promises): tests may mock it.
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.wake()
    }, delayMs)
  }

  private async run (): Promise<void> {
    try {
      let more: boolean
      do {
        this.again = false
        more = this.mode === 'log' ? await this.logBatch() === this.batchSize : await this.sendNext()
      } while (!this.closed && (more || this.again))
    } catch (err) {
      const { code, message } = err as { code?: unknown, message?: unknown }
      this.options.log.warn({ code, reason: message }, 'mail dispatch failed; retrying at the next poll')
    }
  }

  private async logBatch (): Promise<number> {
    const { logLinks } = this.options
    if (!logLinks && !this.loggedTextsCleared) {
      const cleared = await clearLoggedTexts(this.options.db)
      this.loggedTextsCleared = true
      if (cleared > 0) this.options.log.info({ cleared }, 'the text of mails logged earlier, links included, is cleared from the outbox')
    }
    const batch = await claimForLog(this.options.db, this.batchSize, logLinks)
    for (const mail of batch) {
      const named = { id: mail.id, kind: mail.kind, to: mail.recipient, subject: mail.subject }
      if (logLinks) {
        this.options.log.info({ mail: { ...named, text: mail.text } }, 'mail not sent (TOLLBOOTH_SMTP_URL is unset); here it is, link included')
      } else {
        this.options.log.warn({ mail: named }, 'mail not sent (TOLLBOOTH_SMTP_URL is unset) and dropped; its link is not logged (TOLLBOOTH_MAIL_LOG_LINKS)')
      }
    }
    return batch.length
  }

  /** Claims one due mail and sends it; false when none was due. One claimed as the dispatcher closed is handed back. */
  private async sendNext (): Promise<boolean> {
    const transport = this.options.transport
    if (transport === undefined || this.closed) return false
    const [mail] = await claimDueMail(this.options.db, 1, this.leaseMs)
    if (mail === undefined) return false
    if (this.closed) {
      await releaseClaim(this.options.db, mail.id)
      return false
    }
    await this.sendOne(transport, mail)
    return true
  }

  private async sendOne (transport: MailTransport, mail: ClaimedMail): Promise<void> {
    const fields = { mailId: mail.id, kind: mail.kind, attempt: mail.attempt }
    try {
      await transport.send(mail)
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err)
      const giveUp = mail.attempt >= this.options.maxAttempts
      const retryInMs = Math.min(maxRetryDelayMs, this.options.retryDelayMs * 2 ** (mail.attempt - 1))
      await markAttemptFailed(this.options.db, mail.id, reason, { giveUp, retryInMs })
      if (giveUp) this.options.log.error({ ...fields, reason }, `mail given up after ${mail.attempt} attempt(s)`)
      else this.options.log.warn({ ...fields, reason, retryInMs }, 'mail not sent; will retry')
      // A retry due before the next poll is looked for then.
      if (!giveUp && retryInMs < this.options.pollIntervalMs) this.retries.add(retryInMs)
      return
    }
    await markSent(this.options.db, mail.id)
    this.options.log.info(fields, 'mail sent')
  }
}
