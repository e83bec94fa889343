/**
 * One-time account tokens (table account_tokens): password reset and email verification.
 * Only the SHA-256 of a token is stored; a token is spent inside a transaction that locks its
 * row, so two uses race to one.
 */
import type { MailMessage } from '../mail/outbox.js'
import type { Queryable } from './pool.js'

export type AccountTokenPurpose = 'password_reset' | 'verify_email'

export async function insertAccountToken (db: Queryable, token: { tokenHash: Buffer, purpose: AccountTokenPurpose, userId: string, ttlSeconds: number }): Promise<void> {
  await db.query(
    'INSERT INTO account_tokens (token_hash, purpose, user_id, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))',
    [token.tokenHash, token.purpose, token.userId, token.ttlSeconds])
}

/**
 * For the account with this email, if there is one (and, with `onlyUnverified`, its address is
 * not verified yet): a token and its mail, in one statement (one transaction). An unknown email
 * runs the same statement and writes nothing, so both cost the same. True when it wrote.
 */
export async function issueTokenWithMail (db: Queryable, input: {
  email: string
  purpose: AccountTokenPurpose
  tokenHash: Buffer
  ttlSeconds: number
  onlyUnverified: boolean
  mail: MailMessage
}): Promise<boolean> {
  const { rows } = await db.query<{ issued: number }>(
    `WITH account AS (
       SELECT id FROM users WHERE email = $1 AND (NOT $7::boolean OR email_verified_at IS NULL)
     ), token AS (
       INSERT INTO account_tokens (token_hash, purpose, user_id, expires_at)
       SELECT $2, $3, id, now() + make_interval(secs => $4) FROM account
     ), mail AS (
       INSERT INTO mail_outbox (kind, recipient, subject, body_text) SELECT $5, $1, $6, $8 FROM account
     )
     SELECT count(*)::int AS issued FROM account`,
    [input.email, input.tokenHash, input.purpose, input.ttlSeconds, input.mail.kind, input.mail.subject, input.onlyUnverified, input.mail.text])
  return (rows[0]?.issued ?? 0) > 0
}

/**
 * Locks the live token of this purpose and spends it (used_at); returns its user, or undefined
 * for an unknown, used or expired token (one answer for all three). Inside a transaction, a
 * concurrent use waits on the lock and then finds it used.
 */
export async function spendAccountToken (db: Queryable, tokenHash: Buffer, purpose: AccountTokenPurpose): Promise<string | undefined> {
  const { rows } = await db.query<{ user_id: string, live: boolean }>(
    `SELECT user_id, (used_at IS NULL AND expires_at > now()) AS live
       FROM account_tokens WHERE token_hash = $1 AND purpose = $2 FOR UPDATE`,
    [tokenHash, purpose])
  const row = rows[0]
  if (row === undefined || !row.live) return undefined
  await db.query('UPDATE account_tokens SET used_at = now() WHERE token_hash = $1', [tokenHash])
  return row.user_id
}

/** Whether the token is live now (no lock): a cheap check before the hash it would cost. */
export async function isLiveAccountToken (db: Queryable, tokenHash: Buffer, purpose: AccountTokenPurpose): Promise<boolean> {
  const { rows } = await db.query(
    'SELECT 1 FROM account_tokens WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > now()',
    [tokenHash, purpose])
  return rows.length > 0
}

/** Spends every other live token of the user for this purpose (a reset ends the others). */
export async function spendAllAccountTokens (db: Queryable, userId: string, purpose: AccountTokenPurpose): Promise<void> {
  await db.query('UPDATE account_tokens SET used_at = now() WHERE user_id = $1 AND purpose = $2 AND used_at IS NULL', [userId, purpose])
}
