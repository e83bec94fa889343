/**
 * A user's second factors (migration 008): the TOTP secret (sealed by the caller, accounts/factors/totp.ts),
 * the recovery codes (keyed hashes, accounts/factors/recovery-codes.ts), and the challenges of sign-ins
 * waiting for their second step. Every spend is one conditional statement, so of two concurrent
 * submissions of one code, or one challenge, exactly one wins.
 */
import type { Queryable } from '../pool.js'

export interface TotpFactorRow {
  secretSealed: Buffer
  createdAt: Date
  confirmedAt: Date | null
  lastUsedStep: number | null
}

export async function findTotpFactor (db: Queryable, userId: string): Promise<TotpFactorRow | undefined> {
  const { rows } = await db.query<{ secret_sealed: Buffer, created_at: Date, confirmed_at: Date | null, last_used_step: string | null }>(
    'SELECT secret_sealed, created_at, confirmed_at, last_used_step FROM totp_factors WHERE user_id = $1', [userId])
  const row = rows[0]
  if (row === undefined) return undefined
  return { secretSealed: row.secret_sealed, createdAt: row.created_at, confirmedAt: row.confirmed_at, lastUsedStep: row.last_used_step === null ? null : Number(row.last_used_step) }
}

/** A new secret waiting for its first code, in place of one still waiting; false when a confirmed one exists (it is kept). */
export async function putPendingTotp (db: Queryable, userId: string, secretSealed: Buffer): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO totp_factors (user_id, secret_sealed) VALUES ($1, $2)
     ON CONFLICT (user_id) DO UPDATE SET secret_sealed = EXCLUDED.secret_sealed, created_at = now(), last_used_step = NULL
     WHERE totp_factors.confirmed_at IS NULL`,
    [userId, secretSealed])
  return rowCount === 1
}

/**
 * Spends the code of `step`: only a step later than the last one spent (so a code, or an older one,
 * never works twice), on a confirmed secret, or (`confirm`) on the pending one, confirming it.
 * False when another submission spent it first, or nothing matches.
 */
export async function spendTotpStep (db: Queryable, userId: string, step: number, confirm: boolean): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE totp_factors SET last_used_step = $2, confirmed_at = coalesce(confirmed_at, now())
      WHERE user_id = $1 AND (confirmed_at IS NULL) = $3 AND (last_used_step IS NULL OR last_used_step < $2)`,
    [userId, step, confirm])
  return rowCount === 1
}

/** Removes the TOTP factor (confirmed or not); false when there was none. */
export async function deleteTotpFactor (db: Queryable, userId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM totp_factors WHERE user_id = $1', [userId])
  return rowCount === 1
}

/** A user's confirmed second factors, as a login or a factor change decides by them. */
export interface SecondFactors {
  totp: boolean
  recoveryCodesLeft: number
}

/** The recovery codes' counts and when they were made; undefined when the user has none. */
export async function recoveryCodesSummary (db: Queryable, userId: string): Promise<{ left: number, createdAt: Date } | undefined> {
  const { rows } = await db.query<{ left: number, created_at: Date | null }>(
    'SELECT count(*) FILTER (WHERE used_at IS NULL)::int AS left, min(created_at) AS created_at FROM recovery_codes WHERE user_id = $1', [userId])
  const row = rows[0]
  return row?.created_at === null || row === undefined ? undefined : { left: row.left, createdAt: row.created_at }
}

/** The user's recovery codes replaced by these hashes (the old ones stop working); in the caller's transaction. */
export async function replaceRecoveryCodes (db: Queryable, userId: string, codeHashes: readonly Buffer[]): Promise<void> {
  await db.query('DELETE FROM recovery_codes WHERE user_id = $1', [userId])
  await db.query('INSERT INTO recovery_codes (user_id, code_hash) SELECT $1, unnest($2::bytea[])', [userId, codeHashes])
}

export async function deleteRecoveryCodes (db: Queryable, userId: string): Promise<void> {
  await db.query('DELETE FROM recovery_codes WHERE user_id = $1', [userId])
}

/** Spends one unused recovery code; false when it is unknown or already spent (by this or a concurrent submission). */
export async function spendRecoveryCode (db: Queryable, userId: string, codeHash: Buffer): Promise<boolean> {
  const { rowCount } = await db.query(
    'UPDATE recovery_codes SET used_at = now() WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL', [userId, codeHash])
  return rowCount === 1
}

export type ChallengePurpose = 'second_factor' | 'enrol'

export interface LoginChallengeRow {
  userId: string
  purpose: ChallengePurpose
  amr: string[]
  deviceHash: Buffer | null
}

type ChallengeRow = { user_id: string, purpose: ChallengePurpose, amr: string[], device_hash: Buffer | null }

function toChallenge (row: ChallengeRow | undefined): LoginChallengeRow | undefined {
  return row === undefined ? undefined : { userId: row.user_id, purpose: row.purpose, amr: row.amr, deviceHash: row.device_hash }
}

export async function insertLoginChallenge (db: Queryable, challenge: { tokenHash: Buffer, userId: string, purpose: ChallengePurpose, amr: readonly string[], deviceHash: Buffer | null, expiresAt: Date }): Promise<void> {
  await db.query('INSERT INTO login_challenges (token_hash, user_id, purpose, amr, device_hash, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
    [challenge.tokenHash, challenge.userId, challenge.purpose, challenge.amr, challenge.deviceHash, challenge.expiresAt])
}

/** A live challenge, unspent and before its end (by the caller's clock), without spending it. */
export async function findLoginChallenge (db: Queryable, tokenHash: Buffer, now: Date): Promise<LoginChallengeRow | undefined> {
  const { rows } = await db.query<ChallengeRow>(
    'SELECT user_id, purpose, amr, device_hash FROM login_challenges WHERE token_hash = $1 AND expires_at > $2', [tokenHash, now])
  return toChallenge(rows[0])
}

/**
 * Spends a live challenge: deleted, so a second submission finds nothing (a concurrent one waits
 * on the row lock, then finds it gone). In the caller's transaction: a rollback gives it back.
 */
export async function spendLoginChallenge (db: Queryable, tokenHash: Buffer, now: Date): Promise<LoginChallengeRow | undefined> {
  const { rows } = await db.query<ChallengeRow>(
    'DELETE FROM login_challenges WHERE token_hash = $1 AND expires_at > $2 RETURNING user_id, purpose, amr, device_hash', [tokenHash, now])
  return toChallenge(rows[0])
}
