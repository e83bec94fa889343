/**
 * Register, login, refresh and logout: the rules, with HTTP left to the routes. The session's
 * opening (session-opener.ts), the second step (second-step.ts) and the refresh (token-refresh.ts)
 * are their own modules.
 * Every database change of one request happens in one transaction (or one statement,
 * atomic on its own), so a failure leaves nothing half-written.
 */
import { createError } from '../../errors.js'
import { withTransaction, isForeignKeyViolation, findUserById, insertUser, publicUser, replacePasswordHash, resetAccountFailures, resetDeviceFailures, countRegistration, type ThrottleKeys, type FailureCounts, lookUpLogin, type LoginLookup, type ChallengePurpose, type User } from '../../db/index.js'
import { addressKey, liveFailures } from '../login-throttle.js'
import { deviceTokenHash, newDeviceToken } from './devices.js'
import {
  hashAcceptedPassword, passwordCheckRules, recordFailedCheck, startPasswordCheck, verifyDummyForms, verifyPasswordForms,
  type HashedRequest, type PasswordCheckLog, type PasswordCheckRules,
} from '../password-check.js'
import type { AccessTokens } from '../tokens.js'
import { acceptNewPassword, passwordForms } from '../password-policy.js'
import { mailboxKey } from '../../mail/index.js'
import { normaliseEmail } from '../email.js'
import type { AccountMailService } from '../account-mail-service.js'
import type { AccountServiceDeps } from '../account-service.js'
import type { CodeMethod, SecondFactorCheck, SecondFactorMode, VerifiedFactor } from '../factors/second-factor-check.js'
import { SessionOpener, sessionAddress, type AuthResult, type SignedIn, type SignInRequest } from './session-opener.js'
import { passwordAmr, SecondStep, type SecondStepChallenge } from './second-step.js'
import { TokenRefresh } from './token-refresh.js'

/** Registrations one client address, and one registered address, may send in a window. */
interface RegisterThrottlePolicy {
  clientRequests: number
  accountRequests: number
  windowSeconds: number
}

export type LoginOutcome = SignedIn | { challenge: SecondStepChallenge }

export interface AuthServiceDeps extends AccountServiceDeps {
  accessTokens: AccessTokens
  refreshTokenTtlSeconds: number
  /** A session's absolute lifetime: no refresh token of it expires later. */
  sessionMaxLifetimeSeconds: number
  /** A rotated refresh token presented again within this gets the same successor instead of counting as reuse. */
  refreshGraceSeconds: number
  loginDeadlineMs: number
  registerThrottle: RegisterThrottlePolicy
  /** A device token's lifetime, renewed at each sign-in from the device. */
  deviceTtlDays: number
  /** Queues the verification mail of a new account (../account-mail-service.ts); none: no mail. */
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

/** What a session records of a hashed request. */
function signInRequest (context: HashedRequest): SignInRequest {
  return { userAgent: context.userAgent, client: context.ticket.client }
}

/** Why a login failed, for the security log (never sent to the client: it would tell accounts apart). */
type LoginFailure = 'unknown_email' | 'wrong_password' | 'stored_hash_refused' | 'email_not_verified'

export class AuthService {
  /** Background work still running: re-hashes and owner alerts (tests and shutdown wait on them). */
  readonly backgroundJobs = new Set<Promise<void>>()

  private readonly opener: SessionOpener
  private readonly secondStep: SecondStep
  private readonly tokenRefresh: TokenRefresh

  constructor (private readonly deps: AuthServiceDeps) {
    const opener = this.opener = new SessionOpener(deps)
    const now = (): number => this.now()
    this.secondStep = new SecondStep({ ...deps, opener, now })
    this.tokenRefresh = new TokenRefresh({ ...deps, opener })
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
      return await this.opener.open(client, user, signInRequest(context), device, passwordAmr)
    })
    this.deps.accountMail?.mailQueued()
    return { result, deviceToken: device.token }
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
    const keysOf = ({ knownDevice }: Pick<LoginLookup, 'knownDevice'>): ThrottleKeys => knownDevice ? { device: lookupKeys.device } : { account: lookupKeys.account, address: lookupKeys.address }
    const windowStartedAfter = this.now() - this.deps.loginThrottle.windowMs
    // The throttle's counts and the device come with the user, in the same statement: one round trip.
    // The address's accounts only where its failures, with its checks under way here, may reach its bound.
    const read = async (countAddressAccounts: boolean): Promise<LoginLookup> => await lookUpLogin(this.deps.db, email, lookupKeys, {
      sessionAddress: sessionAddress(ticket.client),
      windowStartedAfter,
      countAddressAccountsFrom: countAddressAccounts ? 0 : Math.max(0, this.deps.loginThrottle.addressFreeFailures - this.deps.checksUnderWay.underWay('address', lookupKeys.address)),
    })
    // Without a device token the check is judged by the account and the address whatever the read finds.
    const rules = { ...passwordCheckRules(this.deps, ticket), presumedKeys: device === undefined ? keysOf({ knownDevice: false }) : undefined }
    const { found: { user, knownDevice, secondFactors, failures }, keys, end: endCheck } = await startPasswordCheck(read, keysOf, rules, this.loginLog)
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
      const secondStep = this.secondStep.purposeFor(secondFactors)
      if (secondStep !== undefined) {
        // The password step is over (its success recorded); the sign-in waits for the second.
        const [challenge] = await Promise.all([
          this.secondStep.issue(user.id, secondStep, secondFactors, knownDevice ? device : undefined),
          this.recordSuccess(keys, rules, failures).finally(endCheck),
        ])
        if (verified.needsRehash || verified.form !== forms[0]) this.rehashInBackground(user.id, user.passwordHash, forms[0])
        return { challenge }
      }
      const deviceToken = knownDevice && context.deviceToken !== undefined ? { token: context.deviceToken, hash: device ?? Buffer.alloc(0) } : newDeviceToken()
      // The session with the device, and the throttle's outcome, each its own statement: holding
      // the failure row while waiting on the user row would invert an account deletion's lock order
      // (db/accounts/accounts.ts). The check ends once its outcome is written, not after the session.
      const [result] = await Promise.all([
        this.opener.open(this.deps.db, user, signInRequest(context), deviceToken, passwordAmr).catch((err: unknown) => {
          // The account was deleted since the lookup: answered as its absence would be, not a 500.
          if (!isForeignKeyViolation(err)) throw err
          this.deps.log.info({ event: 'login_account_deleted', userId: user.id, address: lookupKeys.address }, 'login of an account deleted meanwhile')
          throw createError('AUTH_INVALID_CREDENTIALS')
        }),
        this.recordSuccess(keys, rules, failures).finally(endCheck),
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

  /**
   * A sign-in whose proof was verified elsewhere (a passkey assertion: ../factors/passkey-service.ts): a
   * session and a new device, as a password login opens, with no hash; `user` as read with the
   * proof, `amr` how it signed in.
   * The address rules of a password login apply: an unverified account signs in only where they allow it.
   */
  async signInVerified (user: User, request: SignInRequest, amr: readonly string[]): Promise<SignedIn> {
    if (user.emailVerifiedAt === null && this.deps.unverifiedLogin !== 'allow' && this.deps.unverifiedLogin !== undefined) throw createError('EMAIL_NOT_VERIFIED')
    const device = newDeviceToken()
    const result = await this.opener.open(this.deps.db, user, request, device, amr).catch((err: unknown) => {
      // The account was deleted since its passkey was read: answered as an unknown passkey, not a 500.
      if (isForeignKeyViolation(err)) throw createError('PASSKEY_CREDENTIAL_UNKNOWN')
      throw err
    })
    return { result, deviceToken: device.token }
  }

  /**
   * A success forgets the failures of the key it was judged by: a known device's own, or the
   * account's (never the address's), giving back the account's lease. An account that was being
   * throttled is thereby released: a security event. With no lease to give back and no failure
   * read (`read`, the counts the check was decided on), there is nothing to forget and no write;
   * a failure another check wrote since stays counted.
   */
  private async recordSuccess (keys: ThrottleKeys, rules: PasswordCheckRules, read: FailureCounts): Promise<void> {
    if (keys.device !== undefined) {
      if ((read.device?.failures ?? 0) > 0) await resetDeviceFailures(this.deps.db, keys.device)
      return
    }
    if (keys.account === undefined) return
    const lease = rules.lease?.take()
    if (lease === undefined && (read.account?.failures ?? 0) === 0) return
    const before = await resetAccountFailures(this.deps.db, keys.account, lease)
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

  /** The user of a live challenge of `purpose`, without spending it (second-step.ts). */
  async challengeUser (challenge: string, purpose: ChallengePurpose): Promise<string> {
    return await this.secondStep.challengeUser(challenge, purpose)
  }

  /** The second step with a TOTP or recovery code (second-step.ts). */
  async completeWithCode (input: { challenge: string, method: CodeMethod, code: string }, context: SignInRequest): Promise<SignedIn & { recoveryCodes?: string[] }> {
    return await this.secondStep.completeWithCode(input, context)
  }

  /** The second step with a factor verified already, such as a passkey (second-step.ts). */
  async completeWithFactor (challenge: string, userId: string, factor: VerifiedFactor, context: SignInRequest): Promise<SignedIn> {
    return await this.secondStep.completeWithFactor(challenge, userId, factor, context)
  }

  /** Rotates a refresh token (token-refresh.ts). */
  async refresh (refreshToken: string, context: { client?: string } = {}): Promise<AuthResult> {
    return await this.tokenRefresh.refresh(refreshToken, context)
  }

  /** Ends the token's session (token-refresh.ts). */
  async logout (refreshToken: string): Promise<void> {
    await this.tokenRefresh.logout(refreshToken)
  }

  async me (userId: string): Promise<ReturnType<typeof publicUser>> {
    const user = await findUserById(this.deps.db, userId)
    if (user === undefined) throw createError('AUTH_TOKEN_INVALID')
    return publicUser(user)
  }
}
