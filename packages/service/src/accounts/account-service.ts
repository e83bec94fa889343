/**
 * What a signed-in user does to their own account: list and end sessions, sign out everywhere,
 * change the password, delete the account. The password checks follow login's rules
 * (password-check.ts): admitted at the door, the same throttle (a wrong password is a failed
 * login of the account and the address), the verify through the pool under the request's ticket.
 */
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { createError } from '../errors.js'
import type { PasswordEngine } from '../hashing/index.js'
import { withTransaction, spendAllAccountTokens, findUserById, replacePasswordHash, type UserWithHash, listLiveSessions, revokeAllSessionIds, revokeSession, deleteAccount, readFailures, resetDeviceFailures, type FailureCounts, type ThrottleKeys } from '../db/index.js'
import { hashAcceptedPassword, laterHashOptions, passwordCheckRules, recordFailedCheck, startPasswordCheck, verifyPasswordForms, type HashedRequest } from './password-check.js'
import { acceptNewPassword, passwordForms } from './password-policy.js'
import type { LoginThrottlePolicy } from './login-throttle.js'
import type { ChecksUnderWay } from './checks-under-way.js'
import type { SessionCheck } from './session-check.js'

/** What the account's rules need; the sign-in's rules need these and more (sign-in/auth-service.ts). */
export interface AccountServiceDeps {
  db: pg.Pool
  engine: PasswordEngine
  /** Told of every session this service revokes, so their access tokens are refused at once. */
  sessions: SessionCheck
  /** A new password is hashed with registration's deadline, from the request's arrival. */
  registerDeadlineMs: number
  loginThrottle: LoginThrottlePolicy
  /** Password checks under way in this process, by throttle key (shared with the sign-in). */
  checksUnderWay: ChecksUnderWay
  /** Where every process's password checks under way are leased (../password-check.ts); none: this process is the only one signing in on the database. */
  checkLeases?: pg.Pool | undefined
  log: FastifyBaseLogger
  /** Wall-clock time in epoch ms for login throttling (tests pass their own); default Date.now. */
  now?: () => number
}

/** Who is asking: the user and session of the access token. */
export interface Caller {
  userId: string
  sessionId: string
}

export interface SessionView {
  id: string
  createdAt: string
  lastUsedAt: string
  userAgent: string | null
  address: string | null
  current: boolean
}

export class AccountService {
  constructor (private readonly deps: AccountServiceDeps) {}

  async listSessions (caller: Caller): Promise<SessionView[]> {
    const sessions = await listLiveSessions(this.deps.db, caller.userId)
    return sessions.map((session) => ({
      id: session.id,
      createdAt: session.createdAt.toISOString(),
      lastUsedAt: session.lastUsedAt.toISOString(),
      userAgent: session.userAgent,
      address: session.address,
      current: session.id === caller.sessionId,
    }))
  }

  /** Ends one of the caller's sessions (the current one included); SESSION_NOT_FOUND for any other id. */
  async endSession (caller: Caller, sessionId: string): Promise<void> {
    if (!await revokeSession(this.deps.db, caller.userId, sessionId, 'revoked_by_user')) throw createError('SESSION_NOT_FOUND')
    this.deps.sessions.forget([sessionId])
  }

  /** Ends every session of the caller, the current one included. */
  async logoutAll (caller: Caller): Promise<void> {
    const ended = await withTransaction(this.deps.db, async (client) => await revokeAllSessionIds(client, caller.userId, { reason: 'logout_all' }))
    this.deps.sessions.forget(ended)
  }

  async deleteAccount (caller: Caller, password: string, context: HashedRequest): Promise<void> {
    const user = await this.user(caller)
    await this.verifyPassword(caller, user, password, context)
    const { sessionIds } = await deleteAccount(this.deps.db, user.id)
    this.deps.sessions.forget([caller.sessionId, ...sessionIds])
    this.deps.log.info({ event: 'account_deleted', userId: user.id, address: context.ticket.client }, 'account deleted')
  }

  /**
   * Sets the new password, ends every other session and spends the reset links mailed before
   * (one would set a password over this one); the caller's session keeps working.
   */
  async changePassword (caller: Caller, input: { currentPassword: string, newPassword: string }, context: HashedRequest): Promise<void> {
    // The policy's cheap checks before any query or hash; the NFC form is what is hashed.
    const newPassword = acceptNewPassword(input.newPassword, 'newPassword')
    const user = await this.user(caller)
    await this.verifyPassword(caller, user, input.currentPassword, context, 'currentPassword')
    const newHash = await hashAcceptedPassword(this.deps.engine, newPassword, 'newPassword', laterHashOptions(context, this.deps.registerDeadlineMs))
    const ended = await withTransaction(this.deps.db, async (client) => {
      // Only over the hash just verified: a password changed meanwhile (another session) wins.
      if (!await replacePasswordHash(client, user.id, user.passwordHash, newHash)) throw createError('CURRENT_PASSWORD_INCORRECT')
      // The lock order of db/accounts/accounts.ts: the user row (the UPDATE above), the sessions, the account's links.
      const revoked = await revokeAllSessionIds(client, user.id, { except: caller.sessionId, reason: 'password_changed' })
      await spendAllAccountTokens(client, user.id, 'password_reset')
      return revoked
    })
    this.deps.sessions.forget(ended)
    this.deps.log.info({ event: 'password_changed', userId: user.id, address: context.ticket.client, sessionsEnded: ended.length }, 'password changed')
  }

  /** The caller's password given again (a factor's removal): login's rules, as for a password change. Throws CURRENT_PASSWORD_INCORRECT or TOO_MANY_ATTEMPTS. */
  async confirmPassword (caller: Caller, password: string, context: HashedRequest): Promise<void> {
    await this.verifyPassword(caller, await this.user(caller), password, context)
  }

  private async user (caller: Caller): Promise<UserWithHash> {
    const user = await findUserById(this.deps.db, caller.userId)
    if (user === undefined) throw createError('AUTH_SESSION_ENDED')
    return user
  }

  /**
   * Login's rules for a password given again by a signed-in user: admitted at the door (the
   * request's ticket), the throttle decided before any hash, the verify through the pool, a wrong
   * password counted. The signed-in session is the known client here: it is judged by its own
   * failures (as a known device is), never by the account's, so guesses from elsewhere cannot stop
   * the owner changing the password or deleting the account, and a stolen access token buys few
   * guesses. Throws CURRENT_PASSWORD_INCORRECT or TOO_MANY_ATTEMPTS.
   */
  private async verifyPassword (caller: Caller, user: UserWithHash, password: string, { ticket }: HashedRequest, field = 'password'): Promise<void> {
    // Malformed text refused before anything costs; the NFC form first, then the typed form
    // (hashes made before normalisation), as login does.
    const forms = passwordForms(password, field)
    const keys: ThrottleKeys = { device: `session:${caller.sessionId}` }
    const logging = { log: this.deps.log, throttled: 'password check throttled', failed: 'password check failed', fields: { reauthentication: true, userId: user.id } }
    const read = async (): Promise<{ failures: FailureCounts }> => ({ failures: await readFailures(this.deps.db, keys) })
    const { found: { failures }, end: endCheck } = await startPasswordCheck(read, () => keys, passwordCheckRules(this.deps, ticket), logging)
    try {
      const verified = await verifyPasswordForms(this.deps, forms, user, ticket, 'password check')
      if (!verified.match) {
        await recordFailedCheck(this.deps.db, keys, 'wrong_password', this.now(), this.deps.loginThrottle, logging)
        // A later form's refusal (the queue, the deadline) is the answer, once the failure is counted.
        throw verified.unfinished ?? createError('CURRENT_PASSWORD_INCORRECT')
      }
      if (failures.device !== undefined && keys.device !== undefined) await resetDeviceFailures(this.deps.db, keys.device)
    } finally {
      endCheck()
    }
  }

  private now (): number {
    return (this.deps.now ?? Date.now)()
  }
}
