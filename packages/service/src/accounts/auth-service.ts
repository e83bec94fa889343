/**
 * Register, login, refresh and logout: the rules, with HTTP left to the routes.
 * Every database change of one request happens in one transaction (or one statement,
 * atomic on its own), so a failure leaves nothing half-written.
 */
import { performance } from 'node:perf_hooks'
import { isIP } from 'node:net'
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { createError, isTollboothError } from '../errors.js'
import type { HashRequestOptions, HashReservation, PasswordEngine, VerifyResult } from '../hashing/index.js'
import { withTransaction, type Queryable } from '../db/pool.js'
import { isForeignKeyViolation } from '../db/errors.js'
import { findUserById, insertUser, lockUserKeyShare, publicUser, replacePasswordHash, type User } from '../db/users.js'
import { findTokenFamily, insertRefreshToken, lockRefreshToken, markRotated } from '../db/refresh-tokens.js'
import { insertSessionWithToken, lockSessionForRefresh, revokeSession, touchSession } from '../db/sessions.js'
import { recordFailure, resetAccountFailures, type FailureCounts, type ThrottleKeys, type ThrottleScope } from '../db/login-throttle.js'
import { lookUpLogin, type LoginLookup } from '../db/login-lookup.js'
import { addressKey, decide, windowExpiredAtOrBefore, withChecksInFlight, type LoginThrottlePolicy } from './login-throttle.js'
import type { ChecksUnderWay } from './checks-under-way.js'
import { hashRefreshToken, newRefreshToken, newTokenFamily, type AccessTokens, type NewRefreshToken } from './tokens.js'
import { acceptNewPassword, passwordForms } from './password-policy.js'
import type { AccountMailService } from './account-mail-service.js'
import { openSuccessor, sealSuccessor } from './refresh-successor.js'
import type { SessionCheck } from './session-check.js'
import { hashBudgetMs, hashDeadlineAt } from '../http/request-context.js'

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
  /** A session's absolute lifetime: no refresh token of it expires later. */
  sessionMaxLifetimeSeconds: number
  /** A rotated refresh token presented again within this gets the same successor instead of counting as reuse. */
  refreshGraceSeconds: number
  /** Told of every session this service revokes, so their access tokens are refused at once. */
  sessions: SessionCheck
  loginDeadlineMs: number
  registerDeadlineMs: number
  loginThrottle: LoginThrottlePolicy
  /** Password checks under way in this process, by throttle key (shared with AccountService). */
  checksUnderWay: ChecksUnderWay
  log: FastifyBaseLogger
  /** Wall-clock time in epoch ms for login throttling (tests pass their own); default Date.now. */
  now?: () => number
  /** Queues the verification mail of a new account (account-mail-service.ts); none: no mail. */
  accountMail?: AccountMailService
  /**
   * A login with the right password to an account whose address is not verified: `allow`
   * (default); `refuse` (TOLLBOOTH_REQUIRE_VERIFIED_EMAIL): 403 EMAIL_NOT_VERIFIED; `hide`
   * (TOLLBOOTH_REGISTRATION_MODE=enumeration-safe): answered and counted as a wrong password, so
   * that registering an address and then logging in with the same password cannot tell whether
   * the registration created the account (it did: 403 would say so; someone else's: 401).
   */
  unverifiedLogin?: 'allow' | 'refuse' | 'hide'
}

/** Where a request's hash deadline counts from, and how to drop its hash if the client leaves. */
export interface RequestContext {
  signal?: AbortSignal | undefined
  /** When the request arrived, in performance.now() time; undefined: the deadline counts from the hash's submission. */
  receivedAt?: number | undefined
  /** Who asks (the client address): its place in the hash queue's turn order, and the address a new session records. */
  client?: string | undefined
  /** The User-Agent a new session records. */
  userAgent?: string | undefined
  /** The hash queue's place held since the request's admission (hash-admission.ts): its first hash takes it. */
  reservation?: HashReservation | undefined
}

/** A login's context: the client address is required, as its failures are counted and throttled. */
export interface LoginContext extends RequestContext {
  /** The client's address as Fastify resolved it (`request.ip`, after TOLLBOOTH_TRUST_PROXY). */
  client: string
}

/** A verify's result, with the form of the typed password that matched (undefined: none tried). */
export interface VerifiedForm extends VerifyResult {
  form: string | undefined
  /**
   * Why a form after the first could not be verified (the queue, the deadline), when that
   * happened: the check is then decided as not matching, and this is its answer, once the failure
   * is counted (`verifyFormsOfCheck`).
   */
  unfinished?: unknown
}

/**
 * The verifies of one password check, one per form of the typed password (NFC first), through
 * `verifyForm` (a stored hash, or the dummy). Once a verify has started, the client has something
 * to learn from the time of the answer, so from then on the check is decided and its failure
 * counted whatever the client does: the first form may be cancelled only while queued (no hash
 * ran, nothing learnt: `keepIfStarted`); the later forms run without the client's signal; and a
 * later form that cannot run (queue, deadline) counts as not matching, its refusal kept to answer
 * after the failure is written. Without this, hanging up during a second form's verify (after the
 * first form's answer time had shown no match) skipped the count: unlimited guesses of passwords
 * with a decomposable character. Stops at the first match.
 */
export async function verifyFormsOfCheck (forms: readonly string[], hashOptions: HashRequestOptions, verifyForm: (form: string, options: HashRequestOptions) => Promise<VerifyResult>): Promise<VerifiedForm> {
  let result: VerifiedForm = { match: false, needsRehash: false, form: undefined }
  // The later forms: without the client's signal, and without the place the first took.
  const { signal: _clientLeaves, reservation: _taken, ...afterFirst } = hashOptions
  for (const [index, form] of forms.entries()) {
    let verified: VerifyResult
    try {
      verified = await verifyForm(form, index === 0 ? { ...hashOptions, keepIfStarted: true } : afterFirst)
    } catch (err) {
      if (index === 0) throw err
      return { ...result, match: false, unfinished: err }
    }
    result = { ...verified, form }
    if (verified.match) break
  }
  return result
}

/** A hash's options from its request: the deadline counted from the arrival, the client's turn, and its cancellation. */
export function contextHashOptions (deadlineMs: number, { signal, receivedAt, client, reservation }: RequestContext): HashRequestOptions {
  return {
    ...(receivedAt === undefined ? { deadlineMs: hashBudgetMs(deadlineMs) } : { deadlineAt: hashDeadlineAt(receivedAt, deadlineMs) }),
    ...(signal === undefined ? {} : { signal }),
    ...(client === undefined ? {} : { client }),
    ...(reservation === undefined ? {} : { reservation }),
  }
}

/**
 * The client address a session records: an IP address, or nothing. Behind a trusted proxy
 * `request.ip` is whatever the client put in X-Forwarded-For, so anything else is dropped
 * rather than stored (the column holds 64 characters).
 */
export function sessionAddress (client: string | undefined): string | null {
  return client !== undefined && isIP(client) !== 0 ? client : null
}

/** Hashes a new password the policy accepted, through the pool; PASSWORD_TOO_LONG names the body's field. */
export async function hashAcceptedPassword (engine: PasswordEngine, password: string, field: string, options: HashRequestOptions): Promise<string> {
  try {
    return await engine.hash(password, options)
  } catch (err) {
    if (isTollboothError(err, 'PASSWORD_TOO_LONG')) throw createError('PASSWORD_TOO_LONG', err.message, { field })
    throw err
  }
}

/** A stored hash's check: the forms' verdict, and whether the engine refused the stored hash itself. */
export interface StoredPasswordCheck extends VerifiedForm {
  /** The stored hash could not be computed (out of bounds, an unknown format): answered as a wrong password. */
  storedHashRefused?: true
}

/**
 * Verifies the forms of a typed password against a user's stored hash in order (NFC, then the raw
 * form when it differs: password-policy.ts passwordForms) and stops at the first match. A stored
 * hash the engine refuses to compute is the operator's problem (an import gone wrong, a tampered
 * row), not the client's: it is logged, and the check is decided as not matching at a wrong
 * password's cost (the dummies), so the account cannot be told apart from others. Login and
 * re-authentication (account-service.ts) share it; `check` names which in the log.
 */
export async function verifyPasswordForms (deps: Pick<AuthServiceDeps, 'engine' | 'log'>, forms: readonly string[], user: { id: string, passwordHash: string }, hashOptions: HashRequestOptions, check: string): Promise<StoredPasswordCheck> {
  try {
    return await verifyFormsOfCheck(forms, hashOptions, async (form, options) => await deps.engine.verify(form, user.passwordHash, options))
  } catch (err) {
    if (!isTollboothError(err, 'HASH_PARAMS_OUT_OF_BOUNDS') && !isTollboothError(err, 'HASH_FORMAT_UNKNOWN')) throw err
    deps.log.error({ userId: user.id, code: err.code, reason: err.message }, `stored password hash refused; the ${check} is answered as a wrong password`)
    return { match: false, needsRehash: false, form: undefined, storedHashRefused: true, unfinished: await verifyDummyForms(deps.engine, forms, hashOptions) }
  }
}

/**
 * One dummy verify per form, under the rules of a real check's (`verifyFormsOfCheck`): what a
 * wrong password of the same input costs a known account. Returns the refusal of a later form
 * that could not run, if one could not.
 */
export async function verifyDummyForms (engine: PasswordEngine, forms: readonly string[], hashOptions: HashRequestOptions): Promise<unknown> {
  return (await verifyFormsOfCheck(forms, hashOptions, async (form, options) => {
    await engine.verifyDummy(form, options)
    return { match: false, needsRehash: false }
  })).unfinished
}

/** What a password check (a login, or a signed-in user giving their password again) logs with its throttle events. */
export interface PasswordCheckLog {
  log: FastifyBaseLogger
  /** The log line's message for a throttled check, and for a failed one. */
  throttled: string
  failed: string
  /** Fields added to both lines (e.g. `reauthentication: true`). */
  fields?: Record<string, unknown>
}

/**
 * Throws TOO_MANY_ATTEMPTS (logged as a security event) when the throttle refuses a password
 * check now, before any hash; first wakes the checks waiting on the refused keys, which read the
 * same failures.
 */
function assertNotThrottled (failures: FailureCounts, keys: ThrottleKeys, nowMs: number, policy: LoginThrottlePolicy, logging: PasswordCheckLog, checks: ChecksUnderWay): void {
  const decision = decide(failures, nowMs, policy)
  if (decision.allowed) return
  checks.wakeAll(keys, decision.scopes)
  const retryAfterSeconds = Math.ceil(decision.retryAfterMs / 1000)
  logging.log.warn({
    event: 'login_throttled',
    account: keys.account,
    address: keys.address,
    scopes: decision.scopes,
    accountFailures: failures.account?.failures ?? 0,
    addressFailures: failures.address?.failures ?? 0,
    retryAfterSeconds,
    ...logging.fields,
  }, logging.throttled)
  throw createError('TOO_MANY_ATTEMPTS', undefined, { retryAfterSeconds })
}

const throttleScopes: readonly ThrottleScope[] = ['account', 'address']

/** What `startPasswordCheck` decides a check by, and how long it may wait. */
export interface PasswordCheckRules {
  checks: ChecksUnderWay
  policy: LoginThrottlePolicy
  now: () => number
  waitUntil: number
  signal?: AbortSignal | undefined
  beforeReadAgain?: () => void
  /** Called as the check starts to wait for others of its account or address. */
  beforeWait?: () => void
}

/** The rules of a password check made for a request: the service's throttle, the request's deadline and client. */
export function passwordCheckRules (deps: Pick<AuthServiceDeps, 'checksUnderWay' | 'loginThrottle' | 'loginDeadlineMs' | 'engine' | 'now'>, hashOptions: HashRequestOptions, context: LoginContext): PasswordCheckRules {
  return {
    checks: deps.checksUnderWay,
    policy: deps.loginThrottle,
    now: deps.now ?? Date.now,
    waitUntil: waitUntilOf(hashOptions, deps.loginDeadlineMs),
    signal: context.signal,
    beforeReadAgain: () => { deps.engine.assertAdmissible('verify', hashOptions) },
    // A check waiting behind its account's or address's others is not about to queue its hash:
    // it gives back the place its admission held (hash-admission.ts), or checks waiting on one
    // account would count each other as queued ahead (better-auth's storm, 50 clients on one
    // account: 7,000 refusals in 30 s where there were 150). Woken, it is admitted again.
    beforeWait: () => { hashOptions.reservation?.release() },
  }
}

/**
 * Reads the throttle's counts (`read`) and decides a password check on them, before any hash:
 * TOO_MANY_ATTEMPTS (a security event) on the recorded failures, as ever. Otherwise the check
 * starts only if it would still pass were every check under way for its keys to fail; if not,
 * it waits for one of them to end and reads again (src/server/checks-under-way.ts), until
 * `waitUntil` (performance.now() time: then SERVICE_OVERLOADED) or its client leaves
 * (HASH_CANCELLED). `beforeReadAgain` may refuse a check that waited (its hash can no longer be
 * served in time). Returns the last read and the function that ends the check, to call once its
 * outcome is recorded (the failure written, or the success's reset).
 */
export async function startPasswordCheck<T extends { failures: FailureCounts }> (
  read: () => Promise<T>,
  keys: ThrottleKeys,
  rules: PasswordCheckRules,
  logging: PasswordCheckLog
): Promise<{ found: T, end: () => void }> {
  const { checks, policy, now, waitUntil, signal, beforeReadAgain, beforeWait } = rules
  /** The scope whose check's end woke this one, until it takes that room or hands it on. */
  let wokenBy: ThrottleScope | undefined
  /** Its place in the queues of checks waiting, kept from its first wait on. */
  let place: number | undefined
  try {
    for (;;) {
      const readStartedAt = checks.now()
      const found = await read()
      const nowMs = now()
      assertNotThrottled(found.failures, keys, nowMs, policy, logging, checks)
      const counts: FailureCounts = {}
      for (const scope of throttleScopes) {
        const count = withChecksInFlight(found.failures[scope], checks.count(scope, keys[scope], readStartedAt), nowMs, policy)
        if (count !== undefined) counts[scope] = count
      }
      const decision = decide(counts, nowMs, policy)
      if (decision.allowed) return { found, end: checks.begin(keys) }
      // Held back only by checks that have ended, whose failures are written: read again at once.
      const blocking = decision.scopes.filter((scope) => checks.underWay(scope, keys[scope]) > 0)
      if (blocking.length > 0) {
        // Woken for room it cannot take (its other key holds it back): the next check waiting may.
        if (wokenBy !== undefined && !blocking.includes(wokenBy)) checks.passOn(keys, [wokenBy])
        wokenBy = undefined
        place ??= checks.takePlace()
        beforeWait?.()
        const woke = await checks.waitForEnd(keys, blocking, waitUntil, signal, place)
        if (woke === null) {
          if (signal?.aborted === true) throw createError('HASH_CANCELLED', 'The client left while its password check waited for others of its account or address')
          throw createError('SERVICE_OVERLOADED', 'Other password checks of this account or address are still under way', { retryAfterSeconds: 1 })
        }
        wokenBy = woke
      }
      beforeReadAgain?.()
    }
  } catch (err) {
    // Woken, then refused (a 429 now that the failures are written): the next waiting check is decided too.
    if (wokenBy !== undefined) checks.passOn(keys, [wokenBy])
    throw err
  }
}

/** Counts a failed password check for the account and the address (before answering) and logs it; never the password. */
export async function recordFailedCheck (db: Queryable, keys: ThrottleKeys, reason: string, nowMs: number, policy: LoginThrottlePolicy, logging: PasswordCheckLog): Promise<void> {
  const counts = await recordFailure(db, keys, { nowMs, windowExpiredAtOrBefore: windowExpiredAtOrBefore(nowMs, policy) })
  logging.log.info({
    event: 'login_failed',
    reason,
    account: keys.account,
    address: keys.address,
    accountFailures: counts.account?.failures,
    addressFailures: counts.address?.failures,
    ...logging.fields,
  }, logging.failed)
}

/** Until when a password check may wait for its turn: its hash deadline (performance.now() time). */
function waitUntilOf (hashOptions: HashRequestOptions, deadlineMs: number): number {
  return hashOptions.deadlineAt ?? performance.now() + (hashOptions.deadlineMs ?? deadlineMs)
}

/** Why a login failed, for the security log (never sent to the client: it would tell accounts apart). */
type LoginFailure = 'unknown_email' | 'wrong_password' | 'stored_hash_refused' | 'email_not_verified'

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

  /**
   * Opens a session (a refresh family) for the user, with its first refresh token, in one
   * statement (atomic on its own): on the pool (a login, one round trip) or inside a transaction (register).
   */
  private async openSession (db: Queryable, user: User, context: RequestContext): Promise<AuthResult> {
    const sessionId = newTokenFamily()
    const expiresAt = new Date(Date.now() + this.deps.sessionMaxLifetimeSeconds * 1000)
    const refresh = newRefreshToken()
    await insertSessionWithToken(db,
      { id: sessionId, userId: user.id, expiresAt, userAgent: context.userAgent ?? null, address: sessionAddress(context.client) },
      { tokenHash: refresh.tokenHash, expiresAt: this.tokenExpiresAt(expiresAt) })
    return this.result(user, sessionId, refresh.token)
  }

  /** A new refresh token's end: its own lifetime or the session's end, whichever comes first. */
  private tokenExpiresAt (sessionExpiresAt: Date): Date {
    return new Date(Math.min(Date.now() + this.deps.refreshTokenTtlSeconds * 1000, sessionExpiresAt.getTime()))
  }

  /** A new refresh token of the session. */
  private async insertToken (db: Queryable, userId: string, sessionId: string, sessionExpiresAt: Date): Promise<NewRefreshToken> {
    const refresh = newRefreshToken()
    await insertRefreshToken(db, { tokenHash: refresh.tokenHash, familyId: sessionId, userId, expiresAt: this.tokenExpiresAt(sessionExpiresAt) })
    return refresh
  }

  private result (user: User, sessionId: string, refreshToken: string): AuthResult {
    return {
      user: publicUser(user),
      accessToken: this.deps.accessTokens.sign(user.id, sessionId),
      refreshToken,
      expiresIn: this.deps.accessTokens.ttlSeconds,
    }
  }

  /** Hash first: a taken email costs the same as a new one (and admission is decided before any query). */
  private async hashNewPassword (typed: string, context: RequestContext): Promise<string> {
    // The policy's cheap checks before the hash; the NFC form is what is hashed.
    return await hashAcceptedPassword(this.deps.engine, acceptNewPassword(typed), 'password', contextHashOptions(this.deps.registerDeadlineMs, context))
  }

  /** The account, its verification mail (queued in the same transaction) and a session; 409 for a taken email. */
  async register (input: { email: string, password: string, name?: string | undefined }, context: RequestContext = {}): Promise<AuthResult> {
    const email = normaliseEmail(input.email)
    const passwordHash = await this.hashNewPassword(input.password, context)
    const result = await withTransaction(this.deps.db, async (client) => {
      const user = await insertUser(client, { email, name: input.name ?? null, passwordHash })
      if (user === undefined) throw createError('EMAIL_TAKEN', undefined, { field: 'email' })
      await this.deps.accountMail?.queueVerification(client, user)
      return await this.openSession(client, user, context)
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
    const hashOptions = contextHashOptions(this.deps.loginDeadlineMs, context)
    // Admission at once: a login the hash queue cannot serve in time is refused before it
    // costs a database query. Known and unknown emails both pass here first.
    this.deps.engine.assertAdmissible('verify', hashOptions)
    const keys: ThrottleKeys = { account: email, address: addressKey(context.client) }
    // Decided before any hash, on the email (known or not) and the address, so the answer is the same
    // for an account that does not exist, and a guess past the bound costs no CPU. The throttle's
    // counts come with the user, in the same statement: one round trip.
    const read = async (): Promise<LoginLookup> => await lookUpLogin(this.deps.db, email, keys)
    const { found: { user, failures }, end: endCheck } = await startPasswordCheck(read, keys, passwordCheckRules(this.deps, hashOptions, context), this.loginLog)
    try {
      if (user === undefined) {
        // As many verifies of the current policy as a wrong password of this input costs (one per
        // form): same status, body and time.
        return await this.failLogin(keys, 'unknown_email', await verifyDummyForms(this.deps.engine, forms, hashOptions))
      }
      const verified = await verifyPasswordForms(this.deps, forms, user, hashOptions, 'login')
      if (!verified.match) return await this.failLogin(keys, verified.storedHashRefused === true ? 'stored_hash_refused' : 'wrong_password', verified.unfinished)
      if (user.emailVerifiedAt === null && this.deps.unverifiedLogin === 'hide') return await this.failLogin(keys, 'email_not_verified')
      if (user.emailVerifiedAt === null && this.deps.unverifiedLogin === 'refuse') {
        // Only now, the password matched: a guesser learns nothing about the address's state.
        this.deps.log.info({ event: 'login_refused_unverified', userId: user.id, address: keys.address }, 'login refused: email not verified')
        throw createError('EMAIL_NOT_VERIFIED')
      }
      // A success forgets the account's failures (the address's stay); no write when there were none.
      // Its own statement, beside the session's rather than in it: a login holding the failure row
      // while its foreign keys wait on the user row would invert an account deletion's order (accounts.ts).
      const [result] = await Promise.all([
        this.openSession(this.deps.db, user, context).catch((err: unknown) => {
          // The account was deleted (DELETE /me committed) between the lookup and this insert: its
          // foreign key finds no user. The answer is what the account's absence gets, not a 500.
          if (!isForeignKeyViolation(err)) throw err
          this.deps.log.info({ event: 'login_account_deleted', userId: user.id, address: keys.address }, 'login of an account deleted meanwhile')
          throw createError('AUTH_INVALID_CREDENTIALS')
        }),
        // The check ends once its outcome is recorded (the reset, or nothing to reset), not after the
        // session: the next check of this account waits for no more than it must.
        failures.account === undefined ? endCheck() : resetAccountFailures(this.deps.db, keys.account).finally(endCheck),
      ])
      // A hash of the raw form (made before normalisation) moves to the NFC form, as an old policy's moves to the current one.
      if (verified.needsRehash || verified.form !== forms[0]) this.rehashInBackground(user.id, user.passwordHash, forms[0])
      return result
    } finally {
      endCheck()
    }
  }

  /**
   * Counts the failure for the account and the address (before answering), logs it, and throws
   * the 401, or `answer` instead: a later form's refusal (`VerifiedForm.unfinished`).
   */
  private async failLogin (keys: ThrottleKeys, reason: LoginFailure, answer?: unknown): Promise<never> {
    await recordFailedCheck(this.deps.db, keys, reason, this.now(), this.deps.loginThrottle, this.loginLog)
    throw answer ?? createError('AUTH_INVALID_CREDENTIALS')
  }

  private get loginLog (): PasswordCheckLog {
    return { log: this.deps.log, throttled: 'login throttled', failed: 'login failed' }
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

  /**
   * Rotates a refresh token. Holds the user row (KEY SHARE, what the new token's foreign key
   * takes), then locks the session, then the token (the lock order of every writer,
   * src/db/accounts.ts), so refreshes of one session serialise, a revocation cannot miss the
   * token a refresh inserts, and an account deletion is waited for rather than deadlocked with. A rotated token presented again within the grace window gets its
   * sealed successor; later, it is reuse: the session is revoked and the event logged.
   */
  async refresh (refreshToken: string, context: RequestContext = {}): Promise<AuthResult> {
    const tokenHash = hashRefreshToken(refreshToken)
    type Outcome = { error: 'AUTH_REFRESH_TOKEN_INVALID' | 'EMAIL_NOT_VERIFIED' } | { error: 'AUTH_REFRESH_TOKEN_REUSED', userId: string, sessionId: string } | { result: AuthResult }
    const invalid = { error: 'AUTH_REFRESH_TOKEN_INVALID' } as const
    const outcome = await withTransaction(this.deps.db, async (client): Promise<Outcome> => {
      const family = await findTokenFamily(client, tokenHash)
      if (family === undefined) return invalid
      if (!await lockUserKeyShare(client, family.userId)) return invalid
      const session = await lockSessionForRefresh(client, family.familyId)
      const row = await lockRefreshToken(client, tokenHash)
      const nowMs = Date.now()
      if (session === undefined || row === undefined || session.revokedAt !== null || row.revokedAt !== null ||
        session.expiresAt.getTime() <= nowMs || row.expiresAt.getTime() <= nowMs) return invalid
      const user = await findUserById(client, row.userId)
      if (user === undefined) return invalid
      // A session opened before a verified address was required (immediate registration, or
      // before the setting) does not outlive the rule: as for a login, nothing is issued.
      if (user.emailVerifiedAt === null && this.deps.unverifiedLogin === 'refuse') return { error: 'EMAIL_NOT_VERIFIED' }
      if (user.emailVerifiedAt === null && this.deps.unverifiedLogin === 'hide') return invalid
      if (row.rotatedAt !== null) {
        const successor = row.rotatedMsAgo <= this.deps.refreshGraceSeconds * 1000 && row.successorSealed !== null
          ? openSuccessor(refreshToken, row.successorSealed)
          : undefined
        if (successor !== undefined) {
          await touchSession(client, session.id)
          return { result: this.result(user, session.id, successor) }
        }
        // A rotated token came back after the window: stolen or replayed. Revoke the session (committed).
        await revokeSession(client, session.userId, session.id, 'refresh_token_reused')
        return { error: 'AUTH_REFRESH_TOKEN_REUSED', userId: session.userId, sessionId: session.id }
      }
      const next = await this.insertToken(client, user.id, session.id, session.expiresAt)
      await markRotated(client, row.id, sealSuccessor(refreshToken, next.token))
      await touchSession(client, session.id)
      return { result: this.result(user, session.id, next.token) }
    })
    if ('result' in outcome) return outcome.result
    if (outcome.error === 'AUTH_REFRESH_TOKEN_REUSED') {
      this.deps.sessions.forget([outcome.sessionId])
      // A security event: who and where, never the token.
      this.deps.log.warn({ event: 'refresh_token_reused', userId: outcome.userId, sessionId: outcome.sessionId, address: context.client }, 'refresh token reused after rotation: session revoked')
    }
    throw createError(outcome.error)
  }

  /** Revokes the token's session. Unknown tokens are ignored: logout is idempotent and reveals nothing. */
  async logout (refreshToken: string): Promise<void> {
    const family = await findTokenFamily(this.deps.db, hashRefreshToken(refreshToken))
    if (family === undefined) return
    await revokeSession(this.deps.db, family.userId, family.familyId, 'logout')
    this.deps.sessions.forget([family.familyId])
  }

  async me (userId: string): Promise<ReturnType<typeof publicUser>> {
    const user = await findUserById(this.deps.db, userId)
    if (user === undefined) throw createError('AUTH_TOKEN_INVALID')
    return publicUser(user)
  }
}
