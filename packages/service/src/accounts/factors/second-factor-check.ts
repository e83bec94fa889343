/**
 * A second-factor code checked for a user (TOTP or recovery code), and spent by the action it
 * allows, all in one transaction: the account's second-factor throttle row is locked first, so the
 * checks of one account serialise across replicas and a burst of guesses sent at once is counted
 * one by one; past the free failures each guess waits, doubled (../login-throttle.ts, the password
 * throttle's rules under a key of its own). A refused code rolls back what the action wrote and
 * commits the failure alone. Failures are security events; the code is never logged.
 */
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { createError, type ErrorCode } from '../../errors.js'
import { findTotpFactor, lockFailureRow, replaceRecoveryCodes, readFailures, recordFailure, resetAccountFailures, spendRecoveryCode, spendTotpStep, withTransaction, type Queryable, type ThrottleKeys } from '../../db/index.js'
import { openSecret, sealSecret } from '../../keys/index.js'
import { decide, windowExpiredAtOrBefore, type LoginThrottlePolicy } from '../login-throttle.js'
import { matchingTotpStep } from './totp.js'
import { newRecoveryCodes, normaliseRecoveryCode, recoveryCodeHash, recoveryCodeKey } from './recovery-codes.js'

/** TOLLBOOTH_SECOND_FACTOR: `allowed` (enrolled accounts use it), `required` (every account), `off` (never asked). */
export type SecondFactorMode = 'allowed' | 'required' | 'off'

export type CodeMethod = 'totp' | 'recovery_code'

/**
 * A factor proven, spent inside the transaction that acts on it (a sign-in's session, a factor's
 * removal). `spend` throws when a concurrent submission spent it first; the action then rolls back.
 * The passkey sign-in makes its own (its signature counter as what is spent).
 */
export interface VerifiedFactor {
  /** RFC 8176 method the factor adds to the session: `otp`, `hwk`, `swk`. */
  amr: string
  spend (db: Queryable): Promise<void>
}

export interface SecondFactorCheckDeps {
  db: pg.Pool
  log: FastifyBaseLogger
  loginThrottle: LoginThrottlePolicy
  /** Wall clock, epoch ms: TOTP steps and throttle windows (tests move it). */
  now: () => number
  /** The key-encryption key (../key-encryption-key.ts); undefined: no TOTP or recovery codes here. */
  keyEncryptionKey: () => Buffer | undefined
}

type Refusal = 'SECOND_FACTOR_INVALID' | 'TOTP_CODE_REUSED'

/** Thrown by a factor's `spend` when the code was spent meanwhile: the action's writes roll back. */
class FactorSpentMeanwhile extends Error {}

/** What a TOTP secret is sealed with: the user id is the authenticated data, so a secret copied to another user does not open. */
function totpOwner (userId: string): string {
  return `totp:${userId}`
}

/** The throttle key of an account's second-factor guesses, apart from its password's. */
function throttleKeys (userId: string): ThrottleKeys {
  return { account: `second-factor:${userId}` }
}

export class SecondFactorCheck {
  constructor (private readonly deps: SecondFactorCheckDeps) {}

  private key (): Buffer {
    const key = this.deps.keyEncryptionKey()
    if (key === undefined) throw createError('SECOND_FACTOR_UNAVAILABLE')
    return key
  }

  /** Throws SECOND_FACTOR_UNAVAILABLE when there is no key-encryption key to seal secrets with. */
  assertAvailable (): void {
    this.key()
  }

  sealTotp (userId: string, secret: Buffer): Buffer {
    return sealSecret(this.key(), totpOwner(userId), secret)
  }

  private openTotp (userId: string, sealed: Buffer): Buffer {
    const secret = openSecret(this.key(), totpOwner(userId), sealed)
    if (secret === undefined) throw createError('SECOND_FACTOR_UNAVAILABLE', 'The TOTP secret does not open with the configured key-encryption key (another TOLLBOOTH_KEY_ENCRYPTION_KEY sealed it)')
    return secret
  }

  recoveryCodeHash (userId: string, normalisedCode: string): Buffer {
    return recoveryCodeHash(recoveryCodeKey(this.key()), userId, normalisedCode)
  }

  /**
   * Checks `code` for the user, then runs `act` in the same transaction with the proven factor,
   * which `act` must spend. `pendingTotp`: the code confirms a TOTP secret not yet confirmed.
   * Throws TOO_MANY_ATTEMPTS (with Retry-After), SECOND_FACTOR_INVALID, TOTP_CODE_REUSED, or what `act` throws.
   */
  async check<T> (userId: string, method: CodeMethod, code: string, act: (client: Queryable, factor: VerifiedFactor) => Promise<T>, options: { pendingTotp?: boolean } = {}): Promise<T> {
    const keys = throttleKeys(userId)
    const nowMs = this.deps.now()
    const outcome = await withTransaction(this.deps.db, async (client): Promise<{ result: T } | { refused: Refusal }> => {
      await lockFailureRow(client, 'account', keys.account ?? '', new Date(nowMs))
      const failures = await readFailures(client, keys)
      const decision = decide({ account: failures.account }, nowMs, this.deps.loginThrottle)
      if (!decision.allowed) {
        const retryAfterSeconds = Math.ceil(decision.retryAfterMs / 1000)
        this.deps.log.warn({ event: 'second_factor_throttled', userId, method, failures: failures.account?.failures ?? 0, retryAfterSeconds }, 'second-factor check throttled')
        throw createError('TOO_MANY_ATTEMPTS', 'Too many failed second-factor attempts; retry after the given delay', { retryAfterSeconds })
      }
      const prepared = await this.prepare(client, userId, method, code, nowMs, options.pendingTotp === true)
      if ('refused' in prepared) return await this.fail(client, keys, userId, method, prepared.refused, nowMs)
      await client.query('SAVEPOINT second_factor')
      try {
        const result = await act(client, prepared)
        if (failures.account !== undefined) await resetAccountFailures(client, keys.account ?? '')
        return { result }
      } catch (err) {
        if (!(err instanceof FactorSpentMeanwhile)) throw err
        await client.query('ROLLBACK TO SAVEPOINT second_factor')
        return await this.fail(client, keys, userId, method, method === 'totp' ? 'TOTP_CODE_REUSED' : 'SECOND_FACTOR_INVALID', nowMs)
      }
    })
    if ('refused' in outcome) throw createError(outcome.refused as ErrorCode)
    return outcome.result
  }

  private async fail (client: Queryable, keys: ThrottleKeys, userId: string, method: CodeMethod, refused: Refusal, nowMs: number): Promise<{ refused: Refusal }> {
    const counts = await recordFailure(client, keys, { nowMs, windowExpiredAtOrBefore: windowExpiredAtOrBefore(nowMs, this.deps.loginThrottle) })
    this.deps.log.warn({ event: 'second_factor_failed', userId, method, reason: refused, failures: counts.account?.failures ?? 0 }, 'second-factor check failed')
    return { refused }
  }

  /** The factor `code` proves, or why it proves none. Cheap: one row read, one HMAC or TOTP computation. */
  private async prepare (client: Queryable, userId: string, method: CodeMethod, code: string, nowMs: number, pendingTotp: boolean): Promise<VerifiedFactor | { refused: Refusal }> {
    if (method === 'recovery_code') {
      const normalised = normaliseRecoveryCode(code)
      if (normalised === undefined) return { refused: 'SECOND_FACTOR_INVALID' }
      const hash = this.recoveryCodeHash(userId, normalised)
      return {
        amr: 'otp',
        spend: async (db) => { if (!await spendRecoveryCode(db, userId, hash)) throw new FactorSpentMeanwhile() },
      }
    }
    const factor = await findTotpFactor(client, userId)
    if (factor === undefined || (factor.confirmedAt === null) !== pendingTotp) return { refused: 'SECOND_FACTOR_INVALID' }
    const step = matchingTotpStep(this.openTotp(userId, factor.secretSealed), code, nowMs)
    if (step === undefined) return { refused: 'SECOND_FACTOR_INVALID' }
    if (factor.lastUsedStep !== null && step <= factor.lastUsedStep) return { refused: 'TOTP_CODE_REUSED' }
    return {
      amr: 'otp',
      spend: async (db) => { if (!await spendTotpStep(db, userId, step, pendingTotp)) throw new FactorSpentMeanwhile() },
    }
  }
}

/** Ten new recovery codes in place of the user's old ones (in the caller's transaction); returned as shown, once. */
export async function issueRecoveryCodes (client: Queryable, check: SecondFactorCheck, userId: string): Promise<string[]> {
  const codes = newRecoveryCodes()
  await replaceRecoveryCodes(client, userId, codes.map((code) => check.recoveryCodeHash(userId, normaliseRecoveryCode(code) ?? code)))
  return codes
}
