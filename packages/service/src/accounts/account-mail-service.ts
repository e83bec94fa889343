/**
 * The account's mail: address verification, password reset, and registration's mails. Each is
 * written to the outbox in the transaction of the change that causes it and sent by the
 * dispatcher (mail/dispatcher.ts), never awaited by a request, so "forgot my password" costs and
 * says the same whether or not the account exists. A mail's link token is made at its send: here
 * its account token gets a random stand-in for its hash, which no token matches.
 *
 * The bounds, each counted in a fixed window for every email alike, known or not, so that none
 * tells whether an account exists: requests per email and per client address (forgot, resend),
 * and account mails per mailbox (the email folded, mail/mailbox.ts), so that plus-addressed and
 * dotted variants of one address cannot make it a mail cannon. Past a bound, forgot and resend
 * answer 429 with Retry-After: the owner's own request is refused in the open, never dropped in
 * silence. Registration cannot say so without telling a taken address from a new one: there the
 * mail is skipped and the skip logged.
 */
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { createError } from '../errors.js'
import type { PasswordEngine } from '../hashing/index.js'
import { withTransaction, type Queryable, insertAccountToken, isLiveAccountToken, issueTokenWithMail, spendAccountToken, spendAllAccountTokens, type AccountTokenPurpose, countMailRequest, resetAccountFailures, revokeAllSessionIds, forgetDevices, markAlerted, markEmailVerified, setPasswordHashByMail, enqueueMail, type MailRequestCount, type MailRequestScope } from '../db/index.js'
import type { SessionCheck } from './session-check.js'
import { acceptNewPassword } from './password-policy.js'
import { accountPage, hashLinkToken, loginsThrottledMail, mailboxKey, passwordResetMail, registrationAttemptMail, tokenStandIn, verificationMail } from '../mail/index.js'
import { addressKey } from './login-throttle.js'
import { hashAcceptedPassword, type HashedRequest } from './password-check.js'

interface MailThrottlePolicy {
  /** Forgot and resend requests per email (known or not). */
  accountRequests: number
  /** Forgot and resend requests per client address (IPv6 by /64). */
  addressRequests: number
  /** Account mails (and forgot and resend requests) per mailbox (mail/mailbox.ts). */
  mailboxMails: number
  windowSeconds: number
}

/** A token made outright, with the SHA-256 stored for it: a link's token, as the dispatcher makes one at a send. */
export { newLinkToken as newAccountToken } from '../mail/index.js'

/** An account's owner is told of its throttled logins at most this often. */
const alertIntervalSeconds = 3600

export interface AccountMailServiceDeps {
  db: pg.Pool
  engine: PasswordEngine
  /** Told after a commit that queued mail, so it goes out at once. */
  mail: { wake (): void }
  publicUrl: string
  passwordResetTtlSeconds: number
  emailVerificationTtlSeconds: number
  throttle: MailThrottlePolicy
  log: FastifyBaseLogger
  /** The access-token session check, told of the sessions a reset revokes; none: their tokens stop within its cache time. */
  sessions?: SessionCheck
}

type MailCounts = Partial<Record<MailRequestScope, MailRequestCount>>

export class AccountMailService {
  private readonly bounds: Record<MailRequestScope, number>

  constructor (private readonly deps: AccountMailServiceDeps) {
    const { accountRequests, addressRequests, mailboxMails } = deps.throttle
    this.bounds = { account: accountRequests, address: addressRequests, mailbox: mailboxMails }
  }

  /** Inside a registration's transaction: a verification token and its mail, within the mailbox's bound. Call mailQueued() after the commit. */
  async queueVerification (db: Queryable, user: { id: string, email: string }): Promise<void> {
    const mailbox = mailboxKey(user.email)
    const counts = await countMailRequest(db, { mailbox }, this.deps.throttle.windowSeconds)
    if (this.registrationMailSkipped(counts, 'verify_email', user.email, mailbox)) return
    await this.insertVerification(db, user)
  }

  /** Enumeration-safe registration, in its transaction: a new account's verification mail, or a notice to a taken address's owner, within the mail bounds. */
  async queueRegistrationMail (db: Queryable, email: string, created: { id: string } | undefined): Promise<void> {
    const mailbox = mailboxKey(email)
    // Counted alike for a new and a taken address: the counts never tell them apart.
    const counts = await countMailRequest(db, { account: email, mailbox }, this.deps.throttle.windowSeconds)
    if (this.registrationMailSkipped(counts, created === undefined ? 'registration_attempt' : 'verify_email', email, mailbox)) return
    if (created === undefined) await enqueueMail(db, registrationAttemptMail(email))
    else await this.insertVerification(db, { id: created.id, email })
  }

  mailQueued (): void {
    this.deps.mail.wake()
  }

  /**
   * Tells the owner that their account's logins from unknown clients now wait: at most once per
   * `alertIntervalSeconds` an account, however many replicas see the throttling begin.
   */
  async alertThrottledLogins (email: string): Promise<boolean> {
    const alerted = await withTransaction(this.deps.db, async (db) => {
      if (!(await markAlerted(db, email, alertIntervalSeconds))) return false
      await enqueueMail(db, loginsThrottledMail(email))
      return true
    })
    if (alerted) this.mailQueued()
    return alerted
  }

  /** POST /auth/password/forgot: the same work and answer for any email (202), or 429 past a bound. */
  async forgotPassword (email: string, client: string): Promise<void> {
    await this.requestTokenMail(email, client, 'password_reset')
  }

  /** POST /auth/verify-email/resend: a new verification link, if the account exists and is not verified yet. */
  async resendVerification (email: string, client: string): Promise<void> {
    await this.requestTokenMail(email, client, 'verify_email')
  }

  /** The scopes whose count is past its bound. */
  private passed (counts: MailCounts): MailRequestScope[] {
    return (Object.keys(counts) as MailRequestScope[]).filter((scope) => (counts[scope]?.requests ?? 0) > this.bounds[scope])
  }

  /** Past a bound, registration's mail is not queued: the registration answers as any other, so the skip is only logged (a security event). */
  private registrationMailSkipped (counts: MailCounts, kind: 'verify_email' | 'registration_attempt', email: string, mailbox: string): boolean {
    const over = this.passed(counts)
    if (over.length === 0) return false
    this.deps.log.info({ event: 'mail_request_throttled', kind, over, account: email, mailbox }, 'registration mail not queued: the address or its mailbox had its share of mail this window')
    return true
  }

  private async insertVerification (db: Queryable, user: { id: string, email: string }): Promise<void> {
    const ttlSeconds = this.deps.emailVerificationTtlSeconds
    const link = { url: accountPage(this.deps.publicUrl, 'verify-email'), tokenHash: tokenStandIn() }
    await insertAccountToken(db, { tokenHash: link.tokenHash, purpose: 'verify_email', userId: user.id, ttlSeconds })
    await enqueueMail(db, verificationMail(user.email, link, ttlSeconds))
  }

  private async requestTokenMail (email: string, client: string, purpose: AccountTokenPurpose): Promise<void> {
    // Everything is prepared whether or not the account exists: the same CPU either way.
    const ttlSeconds = purpose === 'password_reset' ? this.deps.passwordResetTtlSeconds : this.deps.emailVerificationTtlSeconds
    const mail = purpose === 'password_reset'
      ? passwordResetMail(email, { url: accountPage(this.deps.publicUrl, 'reset-password'), tokenHash: tokenStandIn() }, ttlSeconds)
      : verificationMail(email, { url: accountPage(this.deps.publicUrl, 'verify-email'), tokenHash: tokenStandIn() }, ttlSeconds)
    const address = addressKey(client)
    // One transaction for the counts and the token: one commit (one WAL flush) whether or not the
    // account exists, so the timing does not differ by a disk flush. A refusal rolls its counts back.
    const issued = await withTransaction(this.deps.db, async (db) => {
      const counts = await countMailRequest(db, { account: email, address, mailbox: mailboxKey(email) }, this.deps.throttle.windowSeconds)
      const over = this.passed(counts)
      if (over.length > 0) {
        const retryAfterSeconds = Math.max(...over.map((scope) => counts[scope]?.windowEndsInSeconds ?? 1))
        const byClient = over.includes('address')
        const fields = { event: 'mail_request_throttled', purpose, over, account: email, address, retryAfterSeconds }
        if (byClient) this.deps.log.warn(fields, 'mail request throttled')
        else this.deps.log.info(fields, 'mail request throttled')
        throw createError('TOO_MANY_ATTEMPTS', byClient
          ? 'Too many requests from this address; retry after the given delay'
          : 'Too many mails asked for this email address; retry after the given delay', { retryAfterSeconds })
      }
      return await issueTokenWithMail(db, { email, purpose, ttlSeconds, onlyUnverified: purpose === 'verify_email', mail })
    })
    this.mailQueued()
    this.deps.log.info({ event: 'mail_requested', purpose, account: email, address, issued }, 'account mail requested')
  }

  /**
   * POST /auth/password/reset: a dead token is refused before the hash; then one transaction spends
   * it (user row first, then the reset links, so two uses race to one), sets the hash, spends the
   * other links, revokes every session and forgets the account's login failures.
   */
  async resetPassword (input: { token: string, password: string }, { ticket }: HashedRequest): Promise<void> {
    // The policy's cheap checks first (no query); the NFC form is what is hashed.
    const password = acceptNewPassword(input.password)
    const tokenHash = hashLinkToken(input.token)
    if (!(await isLiveAccountToken(this.deps.db, tokenHash, 'password_reset'))) throw createError('ACCOUNT_TOKEN_INVALID', undefined, { field: 'token' })
    const passwordHash = await hashAcceptedPassword(this.deps.engine, password, 'password', { ticket })
    const outcome = await withTransaction(this.deps.db, async (client) => {
      const userId = await spendAccountToken(client, tokenHash, 'password_reset')
      if (userId === undefined) return undefined
      const email = await setPasswordHashByMail(client, userId, passwordHash)
      if (email === undefined) return undefined
      await spendAllAccountTokens(client, userId, 'password_reset')
      const revokedSessions = await revokeAllSessionIds(client, userId, { reason: 'password_reset' })
      // Whoever took the account over may hold a known device: none stays trusted after a reset.
      await forgetDevices(client, userId)
      await resetAccountFailures(client, email)
      return { userId, revokedSessions }
    })
    if (outcome === undefined) throw createError('ACCOUNT_TOKEN_INVALID', undefined, { field: 'token' })
    // Their access tokens are refused by this process at once (other replicas: within the session check's cache time).
    this.deps.sessions?.forget(outcome.revokedSessions)
    this.deps.log.info({ event: 'password_reset', userId: outcome.userId, revokedSessions: outcome.revokedSessions.length }, 'password reset by mail; every session revoked')
  }

  /**
   * POST /auth/verify-email: spends the token, marks the address verified, and ends every session
   * and forgets every device the account had: whoever registered the address before its owner
   * verified it (a pre-registration hijack) keeps no way in but the password, which a reset replaces.
   */
  async verifyEmail (token: string): Promise<void> {
    const outcome = await withTransaction(this.deps.db, async (client) => {
      const userId = await spendAccountToken(client, hashLinkToken(token), 'verify_email')
      if (userId === undefined) return undefined
      await markEmailVerified(client, userId)
      const revokedSessions = await revokeAllSessionIds(client, userId, { reason: 'email_verified' })
      const forgottenDevices = await forgetDevices(client, userId)
      return { userId, revokedSessions, forgottenDevices }
    })
    if (outcome === undefined) throw createError('ACCOUNT_TOKEN_INVALID', undefined, { field: 'token' })
    this.deps.sessions?.forget(outcome.revokedSessions)
    this.deps.log.info({ event: 'email_verified', userId: outcome.userId, revokedSessions: outcome.revokedSessions.length, forgottenDevices: outcome.forgottenDevices }, 'email address verified; every earlier session ended')
  }
}
