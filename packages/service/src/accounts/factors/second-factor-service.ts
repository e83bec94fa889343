/**
 * A signed-in user's second factors: list them, enrol TOTP (a secret shown once, confirmed by a
 * first code, which also makes the ten recovery codes), remove it, make new recovery codes.
 * Adding or removing a factor ends every other session of the account; removing one, or making
 * new recovery codes, needs the password or a code of a factor.
 */
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { createError } from '../../errors.js'
import { deleteRecoveryCodes, deleteTotpFactor, findTotpFactor, findUserById, lockUserKeyShare, putPendingTotp, recoveryCodesSummary, revokeAllSessionIds, withTransaction, type Queryable } from '../../db/index.js'
import type { AccountService, Caller } from '../account-service.js'
import type { SecondFactorMode } from './second-factor-check.js'
import type { HashedRequest } from '../password-check.js'
import { issueRecoveryCodes, type CodeMethod, type SecondFactorCheck } from './second-factor-check.js'
import type { SessionCheck } from '../session-check.js'
import { newTotpSecret } from './totp.js'

export interface SecondFactorServiceDeps {
  db: pg.Pool
  check: SecondFactorCheck
  account: AccountService
  sessions: SessionCheck
  mode: SecondFactorMode
  log: FastifyBaseLogger
}

export interface FactorView {
  method: 'totp' | 'recovery_code'
  createdAt: string
  /** TOTP: whether its first code confirmed it (only then is it asked at sign-in). */
  confirmed?: boolean
  /** Recovery codes: how many are still unused. */
  remaining?: number
}

/** What proves the caller holds the account again: its password, or a code of one of its factors. */
export type FactorProof = { password: string } | { method: CodeMethod, code: string }

/**
 * The user row first, FOR KEY SHARE (db/accounts/accounts.ts's lock order: the user, then the sessions, then
 * the rest): a factor change and an account deletion queue on it, never deadlock. AUTH_SESSION_ENDED when the account is gone.
 */
async function lockUser (client: Queryable, caller: Caller): Promise<void> {
  if (!await lockUserKeyShare(client, caller.userId)) throw createError('AUTH_SESSION_ENDED')
}

export class SecondFactorService {
  constructor (private readonly deps: SecondFactorServiceDeps) {}

  private assertOn (): void {
    if (this.deps.mode === 'off') throw createError('SECOND_FACTOR_DISABLED')
    this.deps.check.assertAvailable()
  }

  async list (caller: Caller): Promise<FactorView[]> {
    const [totp, codes] = await Promise.all([findTotpFactor(this.deps.db, caller.userId), recoveryCodesSummary(this.deps.db, caller.userId)])
    const items: FactorView[] = []
    if (totp !== undefined) items.push({ method: 'totp', createdAt: totp.createdAt.toISOString(), confirmed: totp.confirmedAt !== null })
    if (codes !== undefined) items.push({ method: 'recovery_code', createdAt: codes.createdAt.toISOString(), remaining: codes.left })
    return items
  }

  /**
   * A new TOTP secret waiting for its first code (in place of one still waiting), shown this once:
   * the otpauth:// URI for a QR code and the base32 text. TOTP_ALREADY_ENROLLED when one is confirmed.
   */
  async beginTotp (userId: string): Promise<{ secret: string, uri: string }> {
    this.assertOn()
    const user = await findUserById(this.deps.db, userId)
    if (user === undefined) throw createError('AUTH_SESSION_ENDED')
    const secret = newTotpSecret(user.email)
    if (!await putPendingTotp(this.deps.db, userId, this.deps.check.sealTotp(userId, secret.secret))) throw createError('TOTP_ALREADY_ENROLLED')
    this.deps.log.info({ event: 'totp_enrolment_started', userId }, 'TOTP enrolment started')
    return { secret: secret.base32, uri: secret.uri }
  }

  /** The first code confirms the waiting secret: a factor from now on. Ends the other sessions; answers the new recovery codes, shown this once. */
  async confirmTotp (caller: Caller, code: string): Promise<{ recoveryCodes: string[] }> {
    this.assertOn()
    const { check } = this.deps
    const { recoveryCodes, ended } = await check.check(caller.userId, 'totp', code, async (client, factor) => {
      await lockUser(client, caller)
      await factor.spend(client)
      return { ended: await this.endOtherSessions(client, caller), recoveryCodes: await issueRecoveryCodes(client, check, caller.userId) }
    }, { pendingTotp: true })
    this.deps.sessions.forget(ended)
    this.deps.log.info({ event: 'second_factor_added', userId: caller.userId, method: 'totp', sessionsEnded: ended.length }, 'TOTP enrolled')
    return { recoveryCodes }
  }

  /** Removes TOTP (confirmed or waiting) and the recovery codes with it, after the proof; ends the other sessions. */
  async removeTotp (caller: Caller, proof: FactorProof, context: HashedRequest): Promise<void> {
    const ended = await this.withProof(caller, proof, context, async (client) => {
      if (!await deleteTotpFactor(client, caller.userId)) throw createError('SECOND_FACTOR_NOT_FOUND')
      await deleteRecoveryCodes(client, caller.userId)
      return await this.endOtherSessions(client, caller)
    })
    this.deps.sessions.forget(ended)
    this.deps.log.info({ event: 'second_factor_removed', userId: caller.userId, method: 'totp', proof: 'password' in proof ? 'password' : proof.method, sessionsEnded: ended.length }, 'TOTP removed')
  }

  /** Ten new recovery codes, the old ones void, after the proof; only with a confirmed factor to recover. */
  async regenerateRecoveryCodes (caller: Caller, proof: FactorProof, context: HashedRequest): Promise<{ recoveryCodes: string[] }> {
    this.assertOn()
    const recoveryCodes = await this.withProof(caller, proof, context, async (client) => {
      const totp = await findTotpFactor(client, caller.userId)
      if (totp?.confirmedAt == null) throw createError('SECOND_FACTOR_NOT_FOUND', 'Recovery codes stand in for a confirmed second factor; enrol one first')
      return await issueRecoveryCodes(client, this.deps.check, caller.userId)
    })
    this.deps.log.info({ event: 'recovery_codes_regenerated', userId: caller.userId }, 'recovery codes made anew')
    return { recoveryCodes }
  }

  /**
   * Runs `act` in one transaction once the proof holds: a code is checked and spent in that
   * transaction (second-factor-check.ts); a password is checked first, by login's rules.
   */
  private async withProof<T> (caller: Caller, proof: FactorProof, context: HashedRequest, act: (client: Queryable) => Promise<T>): Promise<T> {
    if ('password' in proof) {
      await this.deps.account.confirmPassword(caller, proof.password, context)
      return await withTransaction(this.deps.db, async (client) => {
        await lockUser(client, caller)
        return await act(client)
      })
    }
    return await this.deps.check.check(caller.userId, proof.method, proof.code, async (client, factor) => {
      await lockUser(client, caller)
      await factor.spend(client)
      return await act(client)
    })
  }

  private async endOtherSessions (client: Queryable, caller: Caller): Promise<string[]> {
    return await revokeAllSessionIds(client, caller.userId, { except: caller.sessionId, reason: 'second_factor_changed' })
  }
}
