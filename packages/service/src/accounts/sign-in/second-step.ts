/**
 * The second step of a sign-in: the challenge a password login answers for an account with a
 * second factor (kept as its SHA-256 in PostgreSQL, so any replica completes it), and its
 * completion with a TOTP code, a recovery code or a verified passkey, opening the session.
 */
import { timingSafeEqual } from 'node:crypto'
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { createError } from '../../errors.js'
import { withTransaction, type Queryable, findUserById, lockUserKeyShare, insertLoginChallenge, spendLoginChallenge, findLoginChallenge, revokeAllSessionIds, type ChallengePurpose, type LoginChallengeRow, type SecondFactors } from '../../db/index.js'
import { randomToken, secretTokenHash } from '../tokens.js'
import type { SessionCheck } from '../session-check.js'
import { issueRecoveryCodes, type CodeMethod, type SecondFactorCheck, type SecondFactorMode, type VerifiedFactor } from '../factors/second-factor-check.js'
import { deviceTokenHash, newDeviceToken } from './devices.js'
import type { SessionOpener, SignedIn, SignInRequest } from './session-opener.js'

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

/** How long a second step may take after the password. */
const challengeTtlSeconds = 300

/** A password sign-in's methods (RFC 8176). */
export const passwordAmr: readonly string[] = ['pwd']

export interface SecondStepDeps {
  db: pg.Pool
  /** Told of the sessions an enrolment ends. */
  sessions: SessionCheck
  log: FastifyBaseLogger
  opener: SessionOpener
  /** TOLLBOOTH_SECOND_FACTOR and the checks of second-factor codes. */
  secondFactor: { mode: SecondFactorMode, check: SecondFactorCheck }
  now: () => number
}

export class SecondStep {
  constructor (private readonly deps: SecondStepDeps) {}

  /** Whether a login whose password matched needs a second step: the account has a factor, or must enrol one. */
  purposeFor (factors: SecondFactors): ChallengePurpose | undefined {
    const { mode } = this.deps.secondFactor
    if (mode === 'off') return undefined
    if (factors.totp) return 'second_factor'
    return mode === 'required' ? 'enrol' : undefined
  }

  /** A challenge for the second step, kept as its SHA-256 in PostgreSQL (every replica can complete it). */
  async issue (userId: string, purpose: ChallengePurpose, factors: SecondFactors, knownDeviceHash: Buffer | undefined): Promise<SecondStepChallenge> {
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
   * and answers the new recovery codes too. Throttled per account (../factors/second-factor-check.ts).
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
    // The user row first (db/accounts/accounts.ts's lock order): an account deletion under way is waited for, then found done.
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
    const result = await this.deps.opener.open(client, user, context, device, amr)
    this.deps.log.info({ event: 'second_factor_passed', userId, amr }, 'sign-in completed with a second factor')
    return { result, deviceToken: device.token }
  }

  private now (): number {
    return this.deps.now()
  }
}
