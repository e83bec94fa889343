/**
 * The account's mail: address verification, password reset, and registration's mails. Each is
 * written to the outbox in the transaction of the change that causes it and sent by the
 * dispatcher (mail/dispatcher.ts), never awaited by a request, so "forgot my password" costs and
 * says the same whether or not the account exists.
 */
import { createHash, randomBytes } from 'node:crypto'
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { createError } from '../errors.js'
import type { PasswordEngine } from '../hashing/index.js'
import { withTransaction, type Queryable, insertAccountToken, isLiveAccountToken, issueTokenWithMail, spendAccountToken, spendAllAccountTokens, type AccountTokenPurpose, countMailRequest, resetAccountFailures, revokeAllSessionIds, markEmailVerified, setPasswordHashByMail, enqueueMail } from '../db/index.js'
import type { SessionCheck } from './session-check.js'
import { acceptNewPassword } from './password-policy.js'
import { accountLink, passwordResetMail, registrationAttemptMail, verificationMail } from '../mail/index.js'
import { addressKey } from './login-throttle.js'
import { hashAcceptedPassword, type HashedRequest } from './password-check.js'

interface MailThrottlePolicy {
  accountRequests: number
  addressRequests: number
  windowSeconds: number
}

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

interface AccountToken { token: string, tokenHash: Buffer }

/** 32 random bytes (base64url in the link); only the SHA-256 is stored: 256 bits need no slow hash. */
export function newAccountToken (): AccountToken {
  const token = randomBytes(32).toString('base64url')
  return { token, tokenHash: hashAccountToken(token) }
}

function hashAccountToken (token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

export class AccountMailService {
  constructor (private readonly deps: AccountMailServiceDeps) {}

  /** Inside a registration's transaction: a verification token and its mail. Call mailQueued() after the commit. */
  async queueVerification (db: Queryable, user: { id: string, email: string }): Promise<void> {
    const token = newAccountToken()
    await insertAccountToken(db, { tokenHash: token.tokenHash, purpose: 'verify_email', userId: user.id, ttlSeconds: this.deps.emailVerificationTtlSeconds })
    await enqueueMail(db, verificationMail(user.email, accountLink(this.deps.publicUrl, 'verify-email', token.token), this.deps.emailVerificationTtlSeconds))
  }

  /** Enumeration-safe registration, in its transaction: a new account's verification mail, or a notice to a taken address's owner, within the mail bound. */
  async queueRegistrationMail (db: Queryable, email: string, created: { id: string } | undefined): Promise<void> {
    const counts = await countMailRequest(db, { account: email }, this.deps.throttle.windowSeconds)
    if ((counts.account?.requests ?? 1) > this.deps.throttle.accountRequests) {
      this.deps.log.info({ event: 'mail_request_throttled', kind: 'registration', account: email }, 'registration mail not queued: the address had its share this window')
      return
    }
    if (created === undefined) await enqueueMail(db, registrationAttemptMail(email))
    else await this.queueVerification(db, { id: created.id, email })
  }

  mailQueued (): void {
    this.deps.mail.wake()
  }

  /** POST /auth/password/forgot: the same work and answer for any email (202). */
  async forgotPassword (email: string, client: string): Promise<void> {
    await this.requestTokenMail(email, client, 'password_reset')
  }

  /** POST /auth/verify-email/resend: a new verification link, if the account exists and is not verified yet. */
  async resendVerification (email: string, client: string): Promise<void> {
    await this.requestTokenMail(email, client, 'verify_email')
  }

  private async requestTokenMail (email: string, client: string, purpose: AccountTokenPurpose): Promise<void> {
    // Everything is prepared whether or not the account exists: the same CPU either way.
    const token = newAccountToken()
    const ttlSeconds = purpose === 'password_reset' ? this.deps.passwordResetTtlSeconds : this.deps.emailVerificationTtlSeconds
    const mail = purpose === 'password_reset'
      ? passwordResetMail(email, accountLink(this.deps.publicUrl, 'reset-password', token.token), ttlSeconds)
      : verificationMail(email, accountLink(this.deps.publicUrl, 'verify-email', token.token), ttlSeconds)
    const address = addressKey(client)
    // One transaction for the count and the token: one commit (one WAL flush) whether or not the
    // account exists, so the timing does not differ by a disk flush.
    const issued = await withTransaction(this.deps.db, async (db) => {
      const counts = await countMailRequest(db, { account: email, address }, this.deps.throttle.windowSeconds)
      const addressCount = counts.address ?? { requests: 1, windowEndsInSeconds: 1 }
      if (addressCount.requests > this.deps.throttle.addressRequests) {
        this.deps.log.warn({ event: 'mail_request_throttled', scope: 'address', purpose, address, requests: addressCount.requests }, 'mail request throttled')
        throw createError('TOO_MANY_ATTEMPTS', 'Too many requests from this address; retry after the given delay', { retryAfterSeconds: addressCount.windowEndsInSeconds })
      }
      if ((counts.account?.requests ?? 1) > this.deps.throttle.accountRequests) {
        // Answered as any other (202): it says nothing of whether the account exists.
        this.deps.log.info({ event: 'mail_request_throttled', scope: 'account', purpose, account: email, address }, 'mail request throttled (answered 202)')
        return undefined
      }
      return await issueTokenWithMail(db, { email, purpose, tokenHash: token.tokenHash, ttlSeconds, onlyUnverified: purpose === 'verify_email', mail })
    })
    if (issued === undefined) return
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
    const tokenHash = hashAccountToken(input.token)
    if (!(await isLiveAccountToken(this.deps.db, tokenHash, 'password_reset'))) throw createError('ACCOUNT_TOKEN_INVALID', undefined, { field: 'token' })
    const passwordHash = await hashAcceptedPassword(this.deps.engine, password, 'password', { ticket })
    const outcome = await withTransaction(this.deps.db, async (client) => {
      const userId = await spendAccountToken(client, tokenHash, 'password_reset')
      if (userId === undefined) return undefined
      const email = await setPasswordHashByMail(client, userId, passwordHash)
      if (email === undefined) return undefined
      await spendAllAccountTokens(client, userId, 'password_reset')
      const revokedSessions = await revokeAllSessionIds(client, userId, { reason: 'password_reset' })
      await resetAccountFailures(client, email)
      return { userId, revokedSessions }
    })
    if (outcome === undefined) throw createError('ACCOUNT_TOKEN_INVALID', undefined, { field: 'token' })
    // Their access tokens are refused by this process at once (other replicas: within the session check's cache time).
    this.deps.sessions?.forget(outcome.revokedSessions)
    this.deps.log.info({ event: 'password_reset', userId: outcome.userId, revokedSessions: outcome.revokedSessions.length }, 'password reset by mail; every session revoked')
  }

  /** POST /auth/verify-email: spends the token and marks the address verified. */
  async verifyEmail (token: string): Promise<void> {
    const userId = await withTransaction(this.deps.db, async (client) => {
      const owner = await spendAccountToken(client, hashAccountToken(token), 'verify_email')
      if (owner !== undefined) await markEmailVerified(client, owner)
      return owner
    })
    if (userId === undefined) throw createError('ACCOUNT_TOKEN_INVALID', undefined, { field: 'token' })
    this.deps.log.info({ event: 'email_verified', userId }, 'email address verified')
  }
}
