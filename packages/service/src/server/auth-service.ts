/**
 * Register, login, refresh and logout: the rules, with HTTP left to the routes.
 * Every database change of one request happens in one transaction, so a failure
 * leaves nothing half-written.
 */
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { createError, isTollboothError } from '../errors.js'
import type { HashRequestOptions, PasswordEngine, VerifyResult } from '../hashing/types.js'
import { withTransaction, type Queryable } from '../db/pool.js'
import { findUserByEmail, findUserById, insertUser, publicUser, replacePasswordHash, type User } from '../db/users.js'
import { insertRefreshToken, lockRefreshToken, markRotated, revokeFamily } from '../db/refresh-tokens.js'
import { readFailures, recordFailure, resetAccountFailures, type ThrottleKeys } from '../db/login-throttle.js'
import { addressKey, decide, windowExpiredAtOrBefore, type LoginThrottlePolicy } from './login-throttle.js'
import { hashRefreshToken, newRefreshToken, newTokenFamily, type AccessTokens } from './tokens.js'
import { acceptNewPassword, passwordForms } from './password-policy.js'
import type { AccountMailService } from './account-mail-service.js'

export interface AuthResult {
  user: ReturnType<typeof publicUser>
  accessToken: string
  refreshToken: string
  expiresIn: number
}

export interface AuthServiceDeps {
  db: pg.Pool
  engine: PasswordEngine
  accessTokens: AccessTokens
  refreshTokenTtlSeconds: number
  loginDeadlineMs: number
  registerDeadlineMs: number
  loginThrottle: LoginThrottlePolicy
  log: FastifyBaseLogger
  /** Wall-clock time in epoch ms for login throttling (tests pass their own); default Date.now. */
  now?: () => number
  /** Queues the verification mail of a new account (account-service.ts); none: no mail. */
  accountMail?: AccountMailService
  /** TOLLBOOTH_REQUIRE_VERIFIED_EMAIL: a login with the right password and an unverified address is refused. */
  requireVerifiedEmail?: boolean
}

/** Where a request's hash deadline counts from, and how to drop its hash if the client leaves. */
export interface RequestContext {
  signal?: AbortSignal | undefined
  /** When the request arrived, in performance.now() time; undefined: the deadline counts from the hash's submission. */
  receivedAt?: number | undefined
  /** Who asks (the client address): its place in the hash queue's turn order. */
  client?: string | undefined
}

/** A login's context: the client address is required, as its failures are counted and throttled. */
export interface LoginContext extends RequestContext {
  /** The client's address as Fastify resolved it (`request.ip`, after TOLLBOOTH_TRUST_PROXY). */
  client: string
}

/** A verify's result, with the form of the typed password that matched (undefined: none tried). */
interface VerifiedForm extends VerifyResult {
  form: string | undefined
}

/** Why a login failed, for the security log (never sent to the client: it would tell accounts apart). */
type LoginFailure = 'unknown_email' | 'wrong_password' | 'stored_hash_refused'

/**
 * Lower-cased: one account per address whatever its case. The schema's email format admits
 * ASCII only, and ASCII text is already in NFC: so the "trimmed, NFC, lower-cased" of
 * 001_init.sql holds without a normalize() call (the migration's text cannot change: its
 * checksum is verified at every start). The routes trim surrounding spaces before validating.
 */
export function normaliseEmail (email: string): string {
  return email.toLowerCase()
}

export class AuthService {
  /** Background re-hashes still running (tests and shutdown wait on them). */
  readonly pendingRehashes = new Set<Promise<void>>()

  constructor (private readonly deps: AuthServiceDeps) {}

  private async issue (db: Queryable, user: User, familyId: string): Promise<AuthResult> {
    const refresh = newRefreshToken()
    await insertRefreshToken(db, {
      tokenHash: refresh.tokenHash,
      familyId,
      userId: user.id,
      expiresAt: new Date(Date.now() + this.deps.refreshTokenTtlSeconds * 1000),
    })
    return {
      user: publicUser(user),
      accessToken: this.deps.accessTokens.sign(user.id),
      refreshToken: refresh.token,
      expiresIn: this.deps.accessTokens.ttlSeconds,
    }
  }

  private hashOptions (deadlineMs: number, { signal, receivedAt, client }: RequestContext): HashRequestOptions {
    return {
      ...(receivedAt === undefined ? { deadlineMs } : { deadlineAt: receivedAt + deadlineMs }),
      ...(signal === undefined ? {} : { signal }),
      ...(client === undefined ? {} : { client }),
    }
  }

  /** Hash first: a taken email costs the same as a new one (and admission is decided before any query). */
  private async hashNewPassword (typed: string, context: RequestContext): Promise<string> {
    // The policy's cheap checks before the hash; the NFC form is what is hashed.
    const password = acceptNewPassword(typed)
    try {
      return await this.deps.engine.hash(password, this.hashOptions(this.deps.registerDeadlineMs, context))
    } catch (err) {
      if (isTollboothError(err, 'PASSWORD_TOO_LONG')) throw createError('PASSWORD_TOO_LONG', err.message, { field: 'password' })
      throw err
    }
  }

  /** The account, its verification mail (queued in the same transaction) and a session; 409 for a taken email. */
  async register (input: { email: string, password: string, name?: string | undefined }, context: RequestContext = {}): Promise<AuthResult> {
    const email = normaliseEmail(input.email)
    const passwordHash = await this.hashNewPassword(input.password, context)
    const result = await withTransaction(this.deps.db, async (client) => {
      const user = await insertUser(client, { email, name: input.name ?? null, passwordHash })
      if (user === undefined) throw createError('EMAIL_TAKEN', undefined, { field: 'email' })
      await this.deps.accountMail?.queueVerification(client, user)
      return await this.issue(client, user, newTokenFamily())
    })
    this.deps.accountMail?.mailQueued()
    return result
  }

  /**
   * TOLLBOOTH_REGISTRATION_MODE=enumeration-safe: no answer tells a taken address from a new
   * one. A new address gets its account and the verification mail, a taken one's owner a
   * notice; both cost one hash, and neither signs anyone in.
   */
  async registerQuietly (input: { email: string, password: string, name?: string | undefined }, context: RequestContext = {}): Promise<void> {
    const email = normaliseEmail(input.email)
    const passwordHash = await this.hashNewPassword(input.password, context)
    await withTransaction(this.deps.db, async (client) => {
      const user = await insertUser(client, { email, name: input.name ?? null, passwordHash })
      await this.deps.accountMail?.queueRegistrationMail(client, email, user)
    })
    this.deps.accountMail?.mailQueued()
  }

  async login (input: { email: string, password: string }, context: LoginContext): Promise<AuthResult> {
    const email = normaliseEmail(input.email)
    // Malformed text is refused before anything costs: no hash, no query.
    const forms = passwordForms(input.password)
    const hashOptions = this.hashOptions(this.deps.loginDeadlineMs, context)
    // Admission at once: a login the hash queue cannot serve in time is refused before it
    // costs a database query. Known and unknown emails both pass here first.
    this.deps.engine.assertAdmissible('verify', hashOptions)
    const keys: ThrottleKeys = { account: email, address: addressKey(context.client) }
    // The throttle's counts come with the user, in parallel: no added latency.
    const [user, failures] = await Promise.all([findUserByEmail(this.deps.db, email), readFailures(this.deps.db, keys)])
    // Decided before any hash, on the email (known or not) and the address, so the answer is the same
    // for an account that does not exist, and a guess past the bound costs no CPU.
    const nowMs = this.now()
    const decision = decide(failures, nowMs, this.deps.loginThrottle)
    if (!decision.allowed) {
      const retryAfterSeconds = Math.ceil(decision.retryAfterMs / 1000)
      this.deps.log.warn({
        event: 'login_throttled',
        account: keys.account,
        address: keys.address,
        scopes: decision.scopes,
        accountFailures: failures.account?.failures ?? 0,
        addressFailures: failures.address?.failures ?? 0,
        retryAfterSeconds,
      }, 'login throttled')
      throw createError('TOO_MANY_ATTEMPTS', undefined, { retryAfterSeconds })
    }
    if (user === undefined) {
      // As many verifies of the current policy as a wrong password of this input costs (one per
      // form): same status, body and time.
      await this.verifyDummies(forms, hashOptions)
      return await this.failLogin(keys, 'unknown_email')
    }
    let verified: VerifiedForm
    try {
      verified = await this.verifyForms(forms, user.passwordHash, hashOptions)
    } catch (err) {
      if (!isTollboothError(err, 'HASH_PARAMS_OUT_OF_BOUNDS') && !isTollboothError(err, 'HASH_FORMAT_UNKNOWN')) throw err
      // A stored hash we refuse to compute is the operator's problem (an import gone wrong, a
      // tampered row), not the client's: it is logged, and the client gets a wrong password's
      // answer at a wrong password's cost, so the account cannot be told apart from others.
      this.deps.log.error({ userId: user.id, code: err.code, reason: err.message }, 'stored password hash refused; the login is answered as a wrong password')
      await this.verifyDummies(forms, hashOptions)
      return await this.failLogin(keys, 'stored_hash_refused')
    }
    if (!verified.match) return await this.failLogin(keys, 'wrong_password')
    if (this.deps.requireVerifiedEmail === true && user.emailVerifiedAt === null) {
      // Only now, the password matched: a guesser learns nothing about the address's state.
      this.deps.log.info({ event: 'login_refused_unverified', userId: user.id, address: keys.address }, 'login refused: email not verified')
      throw createError('EMAIL_NOT_VERIFIED')
    }
    // A success forgets the account's failures (the address's stay); no write when there were none.
    const [result] = await Promise.all([
      this.issue(this.deps.db, user, newTokenFamily()),
      failures.account === undefined ? undefined : resetAccountFailures(this.deps.db, keys.account),
    ])
    // A hash of the raw form (made before normalisation) moves to the NFC form, as an old policy's moves to the current one.
    if (verified.needsRehash || verified.form !== forms[0]) this.rehashInBackground(user.id, user.passwordHash, forms[0])
    return result
  }

  /**
   * Verifies the forms in order (NFC, then the raw form when it differs) and stops at the first
   * match; a stored hash the engine refuses throws at the first form.
   */
  private async verifyForms (forms: readonly string[], storedHash: string, hashOptions: HashRequestOptions): Promise<VerifiedForm> {
    let result: VerifiedForm = { match: false, needsRehash: false, form: undefined }
    for (const form of forms) {
      const verified = await this.deps.engine.verify(form, storedHash, hashOptions)
      result = { ...verified, form }
      if (verified.match) break
    }
    return result
  }

  /** One dummy verify per form: what a wrong password of the same input costs a known account. */
  private async verifyDummies (forms: readonly string[], hashOptions: HashRequestOptions): Promise<void> {
    for (const form of forms) await this.deps.engine.verifyDummy(form, hashOptions)
  }

  /** Counts the failure for the account and the address (before answering), logs it, and throws the 401. */
  private async failLogin (keys: ThrottleKeys, reason: LoginFailure): Promise<never> {
    const nowMs = this.now()
    const counts = await recordFailure(this.deps.db, keys, { nowMs, windowExpiredAtOrBefore: windowExpiredAtOrBefore(nowMs, this.deps.loginThrottle) })
    this.deps.log.info({
      event: 'login_failed',
      reason,
      account: keys.account,
      address: keys.address,
      accountFailures: counts.account?.failures,
      addressFailures: counts.address?.failures,
    }, 'login failed')
    throw createError('AUTH_INVALID_CREDENTIALS')
  }

  private now (): number {
    return (this.deps.now ?? Date.now)()
  }

  /** Best effort: a failed or refused re-hash never fails the login; the next login tries again. */
  private rehashInBackground (userId: string, oldHash: string, password: string): void {
    const job = (async () => {
      try {
        const newHash = await this.deps.engine.hash(password, { deadlineMs: this.deps.loginDeadlineMs })
        const replaced = await replacePasswordHash(this.deps.db, userId, oldHash, newHash)
        this.deps.log.info({ userId, replaced }, 'password hash upgraded to the current policy')
      } catch (err) {
        this.deps.log.warn({ userId, code: (err as { code?: string }).code }, 'password re-hash skipped')
      }
    })()
    this.pendingRehashes.add(job)
    void job.finally(() => this.pendingRehashes.delete(job))
  }

  async refresh (refreshToken: string): Promise<AuthResult> {
    const tokenHash = hashRefreshToken(refreshToken)
    type Outcome = { error: 'AUTH_REFRESH_TOKEN_INVALID' | 'AUTH_REFRESH_TOKEN_REUSED' } | { result: AuthResult }
    const outcome = await withTransaction(this.deps.db, async (client): Promise<Outcome> => {
      const row = await lockRefreshToken(client, tokenHash)
      if (row === undefined || row.revokedAt !== null || row.expiresAt.getTime() <= Date.now()) {
        return { error: 'AUTH_REFRESH_TOKEN_INVALID' }
      }
      if (row.rotatedAt !== null) {
        // A rotated token came back: it was stolen or replayed. Revoke the whole family (committed).
        await revokeFamily(client, row.familyId)
        return { error: 'AUTH_REFRESH_TOKEN_REUSED' }
      }
      const user = await findUserById(client, row.userId)
      if (user === undefined) return { error: 'AUTH_REFRESH_TOKEN_INVALID' }
      await markRotated(client, row.id)
      return { result: await this.issue(client, user, row.familyId) }
    })
    if ('error' in outcome) throw createError(outcome.error)
    return outcome.result
  }

  /** Revokes the token's family. Unknown tokens are ignored: logout is idempotent and reveals nothing. */
  async logout (refreshToken: string): Promise<void> {
    await withTransaction(this.deps.db, async (client) => {
      const row = await lockRefreshToken(client, hashRefreshToken(refreshToken))
      if (row !== undefined) await revokeFamily(client, row.familyId)
    })
  }

  async me (userId: string): Promise<ReturnType<typeof publicUser>> {
    const user = await findUserById(this.deps.db, userId)
    if (user === undefined) throw createError('AUTH_TOKEN_INVALID')
    return publicUser(user)
  }
}
