/**
 * Sends what the outbox holds. Woken right after a request commits mail, and polls every
 * `pollIntervalMs` for the rest (retries come due, rows of a replica that stopped). Each mail is
 * claimed just before its send and leased for that one send (db/mail-outbox.ts), so replicas never
 * send one twice, however slow the SMTP server. Closing finishes the send in progress only. A
 * failed send is retried after `retryDelayMs`, doubled per attempt (at most an hour), until
 * `maxAttempts`; the log names a message by id and kind, never its link.
 *
 * A mail's link is made here, just before its send: a new token, whose hash replaces the stand-in
 * (or the last attempt's token) in the mail's account token, if that is still live; a link used or
 * expired meanwhile leaves nothing to send (`skipped`). So the outbox never holds a live link.
 *
 * Without a transport (TOLLBOOTH_SMTP_URL unset) each message is written to the log and kept as
 * `logged`: when `logLinks` says so (development), its text with a live link at debug level only;
 * else named only, with no link made, since a live link in a deployment's log hands the account
 * to whoever reads it.
 */
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { claimDueMail, claimForLog, markAttemptFailed, markSent, markSkipped, mintMailLinkToken, releaseClaim, type ClaimedMail } from '../db/index.js'
import { newLinkToken } from './link-token.js'
import { textWithLink } from './messages.js'
import { RetryWakeups } from './retry-wakeups.js'
import type { MailTransport } from './transport.js'

export interface MailDispatcherOptions {
  db: pg.Pool
  log: FastifyBaseLogger
  /** Undefined: log mode. */
  transport: MailTransport | undefined
  /** Log mode: whether a mail's text, a live link included, is logged (at debug level). */
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
        ? 'TOLLBOOTH_SMTP_URL is unset: mail is not sent but written to the log, its text and link at debug level (TOLLBOOTH_LOG_LEVEL=debug); set it to send mail'
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
    const { logLinks, log } = this.options
    const batch = await claimForLog(this.options.db, this.batchSize, logLinks)
    for (const mail of batch) {
      const named = { id: mail.id, kind: mail.kind, to: mail.recipient, subject: mail.subject }
      if (!logLinks) {
        log.warn({ mail: named }, 'mail not sent (TOLLBOOTH_SMTP_URL is unset) and dropped; its link is not logged (TOLLBOOTH_MAIL_LOG_LINKS)')
        continue
      }
      const text = await this.textToSend(mail)
      if (text === undefined) {
        log.info({ mail: named }, 'mail not logged: its link was used or expired first')
        continue
      }
      log.info({ mail: named }, 'mail not sent (TOLLBOOTH_SMTP_URL is unset); its text and link are logged at debug level')
      log.debug({ mail: { ...named, text } }, 'mail text, link included (TOLLBOOTH_MAIL_LOG_LINKS)')
    }
    return batch.length
  }

  /** The text to send, its link made now; undefined when the link was used or expired first. */
  private async textToSend (mail: ClaimedMail): Promise<string | undefined> {
    if (mail.link === undefined) return mail.text
    const token = newLinkToken()
    const minted = await mintMailLinkToken(this.options.db, { id: mail.id, current: mail.link.tokenHash, next: token.tokenHash })
    return minted ? textWithLink(mail.text, mail.link.url, token.token) : undefined
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
    const text = await this.textToSend(mail)
    if (text === undefined) {
      await markSkipped(this.options.db, mail.id, 'the link was used or expired before the send')
      this.options.log.info(fields, 'mail not sent: its link was used or expired first')
      return
    }
    try {
      await transport.send({ ...mail, text })
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
