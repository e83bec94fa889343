/**
 * Register, login, refresh and logout: the rules, with HTTP left to the routes.
 * Every database change of one request happens in one transaction (or one statement,
 * atomic on its own), so a failure leaves nothing half-written.
 */
import { timingSafeEqual } from 'node:crypto'
import { isIP } from 'node:net'
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { createError } from '../errors.js'
import type { PasswordEngine } from '../hashing/index.js'
import { withTransaction, type Queryable, isForeignKeyViolation, findUserById, insertUser, lockUserKeyShare, publicUser, replacePasswordHash, type User, findTokenFamily, insertRefreshToken, lockRefreshToken, markRotated, insertSessionWithToken, lockSessionForRefresh, revokeSession, touchSession, resetAccountFailures, resetDeviceFailures, countRegistration, type ThrottleKeys, lookUpLogin, type LoginLookup, insertLoginChallenge, spendLoginChallenge, findLoginChallenge, revokeAllSessionIds, type ChallengePurpose, type LoginChallengeRow, type SecondFactors } from '../db/index.js'
import { addressKey, liveFailures, type LoginThrottlePolicy } from './login-throttle.js'
import { deviceTokenHash, maxDevicesPerUser, newDeviceToken } from './devices.js'
import type { ChecksUnderWay } from './checks-under-way.js'
import {
  hashAcceptedPassword, passwordCheckRules, recordFailedCheck, startPasswordCheck, verifyDummyForms, verifyPasswordForms,
  type HashedRequest, type PasswordCheckLog, type PasswordCheckRules,
} from './password-check.js'
import { hashRefreshToken, newRefreshToken, newTokenFamily, randomToken, secretTokenHash, type AccessTokens, type NewRefreshToken } from './tokens.js'
import { acceptNewPassword, passwordForms } from './password-policy.js'
import { mailboxKey } from '../mail/index.js'
import type { AccountMailService } from './account-mail-service.js'
import { openSuccessor, sealSuccessor } from './refresh-successor.js'
import type { SessionCheck } from './session-check.js'
import { issueRecoveryCodes, type CodeMethod, type SecondFactorCheck, type VerifiedFactor } from './second-factor-check.js'

export interface AuthResult {
  user: ReturnType<typeof publicUser>
  accessToken: string
  refreshToken: string
  expiresIn: number
}

/** A sign-in's answer and the device token its client keeps (devices.ts), which the route sends as a cookie and a header, never in the body. */
export interface SignedIn {
  result: AuthResult
  deviceToken: string
}

/** The methods a second step may use (the passkey sign-in adds `passkey`). */
type SecondStepMethod = CodeMethod

/**
 * A password login's answer for an account with a second factor (or, with the second factor
 * required, without one: `enrolmentRequired`): no tokens, a challenge for the second step.
 */
export interface SecondStepChallenge {
  mfaRequired: true
  enrolmentRequired?: true
  challenge: string
  methods: SecondStepMethod[]
  /** Seconds the challenge stays valid. */
  expiresIn: number
}

export type LoginOutcome = SignedIn | { challenge: SecondStepChallenge }

/** What a second step records of its request in the session it opens. */
export interface SignInRequest {
  userAgent?: string | undefined
  client?: string | undefined
  /** The device token the client presented (devices.ts), if any. */
  deviceToken?: string | undefined
}

/** TOLLBOOTH_SECOND_FACTOR: `allowed` (enrolled accounts use it), `required` (every account), `off` (never asked). */
export type SecondFactorMode = 'allowed' | 'required' | 'off'

/** How long a second step may take after the password. */
const challengeTtlSeconds = 300

/** Registrations one client address, and one registered address, may send in a window. */
interface RegisterThrottlePolicy {
  clientRequests: number
  accountRequests: number
  windowSeconds: number
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
  registerThrottle: RegisterThrottlePolicy
  /** A device token's lifetime, renewed at each sign-in from the device. */
  deviceTtlDays: number
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
   * (TOLLBOOTH_REGISTRATION_MODE=enumeration-safe): a wrong password, so registering then logging
   * in cannot tell whether the registration created the account.
   */
  unverifiedLogin?: 'allow' | 'refuse' | 'hide'
  /** TOLLBOOTH_SECOND_FACTOR and the checks of second-factor codes. */
  secondFactor: { mode: SecondFactorMode, check: SecondFactorCheck }
}

/** The client address a session records: an IP address or nothing (behind a proxy, X-Forwarded-For is the client's text). */
function sessionAddress (client: string | undefined): string | null {
  return client !== undefined && isIP(client) !== 0 ? client : null
}

/** A password sign-in's methods (RFC 8176). */
const passwordAmr: readonly string[] = ['pwd']

/** What a session records of a hashed request. */
function signInRequest (context: HashedRequest): SignInRequest {
  return { userAgent: context.userAgent, client: context.ticket.client }
}

/** Why a login failed, for the security log (never sent to the client: it would tell accounts apart). */
type LoginFailure = 'unknown_email' | 'wrong_password' | 'stored_hash_refused' | 'email_not_verified'

/**
 * Lower-cased: one account per address whatever its case. The schema admits ASCII only, which is
 * already NFC, so 001_init.sql's "trimmed, NFC, lower-cased" holds (the routes trim).
 */
export function normaliseEmail (email: string): string {
  return email.toLowerCase()
}

export class AuthService {
  /** Background work still running: re-hashes and owner alerts (tests and shutdown wait on them). */
  readonly backgroundJobs = new Set<Promise<void>>()

  constructor (private readonly deps: AuthServiceDeps) {}

  /**
   * A session, its first refresh token and the client's device (remembered, or renewed), in one
   * statement: on the pool (a login), or in a transaction (register, a second step). `amr`: how it signed in.
   */
  private async openSession (db: Queryable, user: User, context: SignInRequest, device: { hash: Buffer }, amr: readonly string[]): Promise<AuthResult> {
    const sessionId = newTokenFamily()
    const expiresAt = new Date(Date.now() + this.deps.sessionMaxLifetimeSeconds * 1000)
    const refresh = newRefreshToken()
    await insertSessionWithToken(db,
      { id: sessionId, userId: user.id, expiresAt, userAgent: context.userAgent ?? null, address: sessionAddress(context.client), amr },
      { tokenHash: refresh.tokenHash, expiresAt: this.tokenExpiresAt(expiresAt) },
      { tokenHash: device.hash, expiresAt: this.deviceExpiresAt(), maxDevicesPerUser })
    return this.result(user, sessionId, refresh.token, amr)
  }

  /** A new refresh token's end: its own lifetime or the session's end, whichever comes first. */
  private tokenExpiresAt (sessionExpiresAt: Date): Date {
    return new Date(Math.min(Date.now() + this.deps.refreshTokenTtlSeconds * 1000, sessionExpiresAt.getTime()))
  }

  private async insertToken (db: Queryable, userId: string, sessionId: string, sessionExpiresAt: Date): Promise<NewRefreshToken> {
    const refresh = newRefreshToken()
    await insertRefreshToken(db, { tokenHash: refresh.tokenHash, familyId: sessionId, userId, expiresAt: this.tokenExpiresAt(sessionExpiresAt) })
    return refresh
  }

  private result (user: User, sessionId: string, refreshToken: string, amr: readonly string[]): AuthResult {
    return {
      user: publicUser(user),
      accessToken: this.deps.accessTokens.sign(user.id, sessionId, amr),
      refreshToken,
      expiresIn: this.deps.accessTokens.ttlSeconds,
    }
  }

  /** Hash first: a taken email costs the same as a new one (and admission is decided before any query). */
  private async hashNewPassword (typed: string, context: HashedRequest): Promise<string> {
    // The policy's cheap checks before the hash; the NFC form is what is hashed.
    return await hashAcceptedPassword(this.deps.engine, acceptNewPassword(typed), 'password', { ticket: context.ticket })
  }

  /**
   * Counts a registration for its client address and its registered mailbox (taken or not, so the
   * answer says nothing of either; `a+1@` and `a.b@` count as `a@` and `ab@`, mail/mailbox.ts); past
   * either bound, TOO_MANY_ATTEMPTS with Retry-After, before any hash. A security event.
   */
  private async assertRegistrationAllowed (email: string, context: HashedRequest): Promise<void> {
    const { clientRequests, accountRequests, windowSeconds } = this.deps.registerThrottle
    const client = addressKey(context.ticket.client)
    const counts = await countRegistration(this.deps.db, { client, account: mailboxKey(email) }, windowSeconds)
    const over = [counts.client.requests > clientRequests ? counts.client : undefined, counts.account.requests > accountRequests ? counts.account : undefined]
      .filter((count) => count !== undefined)
    if (over.length === 0) return
    const retryAfterSeconds = Math.max(...over.map((count) => count.windowEndsInSeconds))
    this.deps.log.warn({ event: 'registration_throttled', account: email, address: client, clientRequests: counts.client.requests, accountRequests: counts.account.requests, retryAfterSeconds }, 'registration throttled')
    throw createError('TOO_MANY_ATTEMPTS', 'Too many registrations from this client or of this address; retry after the given delay', { retryAfterSeconds })
  }

  /** The account, its verification mail (queued in the same transaction), a session and a known device; 409 for a taken email. */
  async register (input: { email: string, password: string, name?: string | undefined }, context: HashedRequest): Promise<SignedIn> {
    const email = normaliseEmail(input.email)
    await this.assertRegistrationAllowed(email, context)
    const passwordHash = await this.hashNewPassword(input.password, context)
    const device = newDeviceToken()
    const result = await withTransaction(this.deps.db, async (client) => {
      const user = await insertUser(client, { email, name: input.name ?? null, passwordHash })
      if (user === undefined) throw createError('EMAIL_TAKEN', undefined, { field: 'email' })
      await this.deps.accountMail?.queueVerification(client, user)
      return await this.openSession(client, user, signInRequest(context), device, passwordAmr)
    })
    this.deps.accountMail?.mailQueued()
    return { result, deviceToken: device.token }
  }

  private deviceExpiresAt (): Date {
    return new Date(Date.now() + this.deps.deviceTtlDays * 86_400_000)
  }

  /**
   * TOLLBOOTH_REGISTRATION_MODE=enumeration-safe: a new address gets its account and the
   * verification mail, a taken one's owner a notice; both cost one hash and answer alike.
   */
  async registerQuietly (input: { email: string, password: string, name?: string | undefined }, context: HashedRequest): Promise<void> {
    const email = normaliseEmail(input.email)
    await this.assertRegistrationAllowed(email, context)
    const passwordHash = await this.hashNewPassword(input.password, context)
    await withTransaction(this.deps.db, async (client) => {
      const user = await insertUser(client, { email, name: input.name ?? null, passwordHash })
      await this.deps.accountMail?.queueRegistrationMail(client, email, user)
    })
    this.deps.accountMail?.mailQueued()
  }

  /**
   * Admitted at the door with `context.ticket`: its verify takes the ticket's place, with no second
   * admission. Throttled before any hash: a client presenting a device token of the account is
   * judged by that device's own failures; any other by the email's (known or not) and the
   * address's, so an unknown account answers the same and a guess past the bound costs no CPU.
   */
  async login (input: { email: string, password: string }, context: HashedRequest): Promise<LoginOutcome> {
    const email = normaliseEmail(input.email)
    // Malformed text is refused before anything costs: no hash, no query.
    const forms = passwordForms(input.password)
    const { ticket } = context
    const device = context.deviceToken === undefined ? undefined : deviceTokenHash(context.deviceToken)
    const lookupKeys = { account: email, address: addressKey(ticket.client), device: device?.toString('hex') }
    const keysOf = ({ knownDevice }: LoginLookup): ThrottleKeys => knownDevice ? { device: lookupKeys.device } : { account: lookupKeys.account, address: lookupKeys.address }
    const windowStartedAfter = this.now() - this.deps.loginThrottle.windowMs
    // The throttle's counts and the device come with the user, in the same statement: one round trip.
    const read = async (): Promise<LoginLookup> => await lookUpLogin(this.deps.db, email, lookupKeys, { sessionAddress: sessionAddress(ticket.client), windowStartedAfter })
    const rules = passwordCheckRules(this.deps, ticket)
    const { found: { user, knownDevice, secondFactors }, keys, end: endCheck } = await startPasswordCheck(read, keysOf, rules, this.loginLog)
    try {
      if (user === undefined) {
        // As many verifies as a wrong password of this input costs: same status, body and time.
        return await this.failLogin(keys, 'unknown_email', rules, await verifyDummyForms(this.deps.engine, forms, ticket))
      }
      const verified = await verifyPasswordForms(this.deps, forms, user, ticket, 'login')
      if (!verified.match) return await this.failLogin(keys, verified.storedHashRefused === true ? 'stored_hash_refused' : 'wrong_password', rules, verified.unfinished, user.id)
      if (user.emailVerifiedAt === null && this.deps.unverifiedLogin === 'hide') return await this.failLogin(keys, 'email_not_verified', rules)
      if (user.emailVerifiedAt === null && this.deps.unverifiedLogin === 'refuse') {
        // Only now, the password matched: a guesser learns nothing about the address's state.
        this.deps.log.info({ event: 'login_refused_unverified', userId: user.id, address: lookupKeys.address }, 'login refused: email not verified')
        throw createError('EMAIL_NOT_VERIFIED')
      }
      const secondStep = this.secondStepPurpose(secondFactors)
      if (secondStep !== undefined) {
        // The password step is over (its success recorded); the sign-in waits for the second.
        const [challenge] = await Promise.all([
          this.issueChallenge(user.id, secondStep, secondFactors, knownDevice ? device : undefined),
          this.recordSuccess(keys, rules).finally(endCheck),
        ])
        if (verified.needsRehash || verified.form !== forms[0]) this.rehashInBackground(user.id, user.passwordHash, forms[0])
        return { challenge }
      }
      const deviceToken = knownDevice && context.deviceToken !== undefined ? { token: context.deviceToken, hash: device ?? Buffer.alloc(0) } : newDeviceToken()
      // The session with the device, and the throttle's outcome, each its own statement: holding
      // the failure row while waiting on the user row would invert an account deletion's lock order
      // (db/accounts.ts). The check ends once its outcome is written, not after the session.
      const [result] = await Promise.all([
        this.openSession(this.deps.db, user, signInRequest(context), deviceToken, passwordAmr).catch((err: unknown) => {
          // The account was deleted since the lookup: answered as its absence would be, not a 500.
          if (!isForeignKeyViolation(err)) throw err
          this.deps.log.info({ event: 'login_account_deleted', userId: user.id, address: lookupKeys.address }, 'login of an account deleted meanwhile')
          throw createError('AUTH_INVALID_CREDENTIALS')
        }),
        this.recordSuccess(keys, rules).finally(endCheck),
      ])
      // A hash of the raw form (made before normalisation) moves to the NFC form, as an old policy's moves to the current one.
      if (verified.needsRehash || verified.form !== forms[0]) this.rehashInBackground(user.id, user.passwordHash, forms[0])
      return { result, deviceToken: deviceToken.token }
    } finally {
      endCheck()
      // A check that ended without a verdict (refused, its client gone) gives its lease back here.
      if (keys.account !== undefined) void rules.lease?.release(keys.account).catch((err: unknown) => { this.deps.log.warn({ err }, 'a password check\'s lease was not given back: it runs out at its deadline') })
    }
  }

  /** Whether a login whose password matched needs a second step: the account has a factor, or must enrol one. */
  private secondStepPurpose (factors: SecondFactors): ChallengePurpose | undefined {
    const { mode } = this.deps.secondFactor
    if (mode === 'off') return undefined
    if (factors.totp) return 'second_factor'
    return mode === 'required' ? 'enrol' : undefined
  }

  /** A challenge for the second step, kept as its SHA-256 in PostgreSQL (every replica can complete it). */
  private async issueChallenge (userId: string, purpose: ChallengePurpose, factors: SecondFactors, knownDeviceHash: Buffer | undefined): Promise<SecondStepChallenge> {
    const token = randomToken()
    const expiresAt = new Date(this.now() + challengeTtlSeconds * 1000)
    await insertLoginChallenge(this.deps.db, { tokenHash: secretTokenHash(token), userId, purpose, amr: passwordAmr, deviceHash: knownDeviceHash ?? null, expiresAt })
    if (purpose === 'enrol') return { mfaRequired: true, enrolmentRequired: true, challenge: token, methods: ['totp'], expiresIn: challengeTtlSeconds }
    const methods: SecondStepMethod[] = ['totp']
    if (factors.recoveryCodesLeft > 0) methods.push('recovery_code')
    return { mfaRequired: true, challenge: token, methods, expiresIn: challengeTtlSeconds }
  }

  /** The user of a live challenge of `purpose`, without spending it; LOGIN_CHALLENGE_INVALID otherwise. */
  async challengeUser (challenge: string, purpose: ChallengePurpose): Promise<string> {
    const row = await findLoginChallenge(this.deps.db, secretTokenHash(challenge), new Date(this.now()))
    if (row?.purpose !== purpose) throw createError('LOGIN_CHALLENGE_INVALID')
    return row.userId
  }

  /**
   * The second step with a code: a TOTP code or a recovery code for a second-factor challenge; for
   * an enrolment challenge, the first code of the TOTP secret enrolled with it, which confirms it
   * and answers the new recovery codes too. Throttled per account (second-factor-check.ts).
   */
  async completeWithCode (input: { challenge: string, method: CodeMethod, code: string }, context: SignInRequest): Promise<SignedIn & { recoveryCodes?: string[] }> {
    if (this.deps.secondFactor.mode === 'off') throw createError('SECOND_FACTOR_DISABLED')
    const tokenHash = secretTokenHash(input.challenge)
    const challenge = await findLoginChallenge(this.deps.db, tokenHash, new Date(this.now()))
    if (challenge === undefined) throw createError('LOGIN_CHALLENGE_INVALID')
    const enrolling = challenge.purpose === 'enrol'
    if (enrolling && input.method !== 'totp') throw createError('SECOND_FACTOR_NOT_FOUND', 'An enrolment challenge is completed by the first code of the TOTP secret enrolled with it')
    const { check } = this.deps.secondFactor
    let recoveryCodes: string[] | undefined
    let ended: string[] = []
    const signedIn = await check.check(challenge.userId, input.method, input.code, async (client, factor) => {
      // A new factor: the account's other sessions end, and its recovery codes are made now.
      const enrol = async (): Promise<void> => {
        ended = await revokeAllSessionIds(client, challenge.userId, { reason: 'second_factor_changed' })
        recoveryCodes = await issueRecoveryCodes(client, check, challenge.userId)
      }
      return await this.completeInTransaction(client, tokenHash, challenge.userId, factor, context, enrolling ? enrol : undefined)
    }, { pendingTotp: enrolling })
    this.deps.sessions.forget(ended)
    if (enrolling) this.deps.log.info({ event: 'second_factor_added', userId: challenge.userId, method: 'totp', sessionsEnded: ended.length }, 'TOTP enrolled at sign-in')
    return recoveryCodes === undefined ? signedIn : { ...signedIn, recoveryCodes }
  }

  /**
   * Completes a second-factor challenge with a factor the caller verified already (a passkey's
   * assertion for the challenge's user): the challenge and the factor spent, the session opened,
   * in one transaction. LOGIN_CHALLENGE_INVALID for a challenge spent, expired or of another user.
   */
  async completeWithFactor (challenge: string, userId: string, factor: VerifiedFactor, context: SignInRequest): Promise<SignedIn> {
    if (this.deps.secondFactor.mode === 'off') throw createError('SECOND_FACTOR_DISABLED')
    return await withTransaction(this.deps.db, async (client) => await this.completeInTransaction(client, secretTokenHash(challenge), userId, factor, context))
  }

  /** Spends the challenge (only the user's, of a second factor unless `beforeSession` enrols) and the factor, then opens the session. */
  private async completeInTransaction (client: Queryable, tokenHash: Buffer, userId: string, factor: VerifiedFactor, context: SignInRequest, beforeSession?: () => Promise<void>): Promise<SignedIn> {
    // The user row first (accounts.ts's lock order): an account deletion under way is waited for, then found done.
    if (!await lockUserKeyShare(client, userId)) throw createError('LOGIN_CHALLENGE_INVALID')
    const row: LoginChallengeRow | undefined = await spendLoginChallenge(client, tokenHash, new Date(this.now()))
    if (row === undefined || row.userId !== userId || (row.purpose === 'enrol') !== (beforeSession !== undefined)) throw createError('LOGIN_CHALLENGE_INVALID')
    await factor.spend(client)
    const user = await findUserById(client, userId)
    if (user === undefined) throw createError('LOGIN_CHALLENGE_INVALID')
    await beforeSession?.()
    // The device the password step came from stays known; any other client gets a new device token.
    const presented = context.deviceToken === undefined ? undefined : deviceTokenHash(context.deviceToken)
    const device = presented !== undefined && row.deviceHash !== null && timingSafeEqual(presented, row.deviceHash) && context.deviceToken !== undefined
      ? { token: context.deviceToken, hash: presented }
      : newDeviceToken()
    const amr = [...new Set([...row.amr, factor.amr, 'mfa'])]
    const result = await this.openSession(client, user, context, device, amr)
    this.deps.log.info({ event: 'second_factor_passed', userId, amr }, 'sign-in completed with a second factor')
    return { result, deviceToken: device.token }
  }

  /**
   * A sign-in whose proof was verified elsewhere (a passkey assertion: passkey-service.ts): a
   * session and a new device, as a password login opens, with no hash; `amr` says how it signed in.
   * The address rules of a password login apply: an unverified account signs in only where they allow it.
   */
  async signInVerified (userId: string, request: SignInRequest, amr: readonly string[]): Promise<SignedIn> {
    const user = await findUserById(this.deps.db, userId)
    if (user === undefined) throw createError('PASSKEY_CREDENTIAL_UNKNOWN')
    if (user.emailVerifiedAt === null && this.deps.unverifiedLogin !== 'allow' && this.deps.unverifiedLogin !== undefined) throw createError('EMAIL_NOT_VERIFIED')
    const device = newDeviceToken()
    const result = await this.openSession(this.deps.db, user, request, device, amr).catch((err: unknown) => {
      // The account was deleted since its passkey was read: answered as an unknown passkey, not a 500.
      if (isForeignKeyViolation(err)) throw createError('PASSKEY_CREDENTIAL_UNKNOWN')
      throw err
    })
    return { result, deviceToken: device.token }
  }

  /**
   * A success forgets the failures of the key it was judged by: a known device's own, or the
   * account's (never the address's), giving back the account's lease. An account that was being
   * throttled is thereby released: a security event.
   */
  private async recordSuccess (keys: ThrottleKeys, rules: PasswordCheckRules): Promise<void> {
    if (keys.device !== undefined) {
      await resetDeviceFailures(this.deps.db, keys.device)
      return
    }
    if (keys.account === undefined) return
    const before = await resetAccountFailures(this.deps.db, keys.account, rules.lease?.take())
    const policy = this.deps.loginThrottle
    if (before !== undefined && liveFailures(before, this.now(), policy) >= policy.accountFreeFailures) {
      this.deps.log.info({ event: 'account_unthrottled', account: keys.account, address: keys.address, failures: before.failures }, 'account throttling ended by a sign-in')
    }
  }

  /**
   * Counts and logs the failure, then throws the 401, or `answer` (a later form's refusal) instead.
   * An account that has just used its free failures is throttled from now on: a security event.
   */
  private async failLogin (keys: ThrottleKeys, reason: LoginFailure, rules: PasswordCheckRules, answer?: unknown, userId?: string): Promise<never> {
    const counts = await recordFailedCheck(this.deps.db, keys, reason, this.now(), this.deps.loginThrottle, this.loginLog, keys.account === undefined ? undefined : rules.lease?.take())
    if (keys.account !== undefined && counts.account?.failures === this.deps.loginThrottle.accountFreeFailures) {
      this.deps.log.warn({ event: 'account_throttled', account: keys.account, address: keys.address, ...(userId === undefined ? {} : { userId }), failures: counts.account.failures }, 'account throttled: its logins from unknown clients wait from now on')
      // Off the answer's path: an account that exists must not answer later than one that does not.
      if (userId !== undefined) this.alertOwner(keys.account, userId)
    }
    throw answer ?? createError('AUTH_INVALID_CREDENTIALS')
  }

  /** Mails the owner that their logins are throttled (at most once an hour); in the background, tracked for close. */
  private alertOwner (email: string, userId: string): void {
    const mail = this.deps.accountMail
    if (mail === undefined) return
    const job = (async () => {
      try {
        if (await mail.alertThrottledLogins(email)) this.deps.log.info({ event: 'owner_alerted', userId }, 'the account\'s owner was mailed that its logins are throttled')
      } catch (err) {
        this.deps.log.warn({ userId, code: (err as { code?: string }).code }, 'the mail to the owner of a throttled account was not queued')
      }
    })()
    this.backgroundJobs.add(job)
    void job.finally(() => this.backgroundJobs.delete(job))
  }

  private get loginLog (): PasswordCheckLog {
    return { log: this.deps.log, throttled: 'login throttled', failed: 'login failed' }
  }

  private now (): number {
    return (this.deps.now ?? Date.now)()
  }

  /** Best effort: a failed or refused re-hash never fails the login; the next login tries again. */
  private rehashInBackground (userId: string, oldHash: string | null, password: string): void {
    const job = (async () => {
      try {
        const newHash = await this.deps.engine.hash(password, { deadlineMs: this.deps.loginDeadlineMs })
        const replaced = await replacePasswordHash(this.deps.db, userId, oldHash, newHash)
        this.deps.log.info({ userId, replaced }, 'password hash upgraded to the current policy')
      } catch (err) {
        this.deps.log.warn({ userId, code: (err as { code?: string }).code }, 'password re-hash skipped')
      }
    })()
    this.backgroundJobs.add(job)
    void job.finally(() => this.backgroundJobs.delete(job))
  }

  /**
   * Rotates a refresh token. Locks the user row (KEY SHARE, as the new token's foreign key does),
   * then the session, then the token (every writer's lock order, db/accounts.ts), so refreshes of a
   * session serialise, a revocation cannot miss the new token, and an account deletion is waited
   * for, not deadlocked with. A rotated token presented again within the grace window gets its
   * sealed successor; later, it is reuse: the session is revoked and the event logged.
   */
  async refresh (refreshToken: string, context: { client?: string } = {}): Promise<AuthResult> {
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
      // A session opened while unverified logins were allowed does not outlive the rule.
      if (user.emailVerifiedAt === null && this.deps.unverifiedLogin === 'refuse') return { error: 'EMAIL_NOT_VERIFIED' }
      if (user.emailVerifiedAt === null && this.deps.unverifiedLogin === 'hide') return invalid
      if (row.rotatedAt !== null) {
        const successor = row.rotatedMsAgo <= this.deps.refreshGraceSeconds * 1000 && row.successorSealed !== null
          ? openSuccessor(refreshToken, row.successorSealed)
          : undefined
        if (successor !== undefined) {
          await touchSession(client, session.id)
          return { result: this.result(user, session.id, successor, session.amr) }
        }
        // A rotated token came back after the window: stolen or replayed. Revoke the session (committed).
        await revokeSession(client, session.userId, session.id, 'refresh_token_reused')
        return { error: 'AUTH_REFRESH_TOKEN_REUSED', userId: session.userId, sessionId: session.id }
      }
      const next = await this.insertToken(client, user.id, session.id, session.expiresAt)
      await markRotated(client, row.id, sealSuccessor(refreshToken, next.token))
      await touchSession(client, session.id)
      return { result: this.result(user, session.id, next.token, session.amr) }
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
