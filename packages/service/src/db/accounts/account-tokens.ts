/**
 * One-time account tokens (table account_tokens): password reset and email verification.
 * Only the SHA-256 of a token is stored; a token is spent inside a transaction that locks its
 * user's row, then the user's tokens of its purpose (the lock order of accounts.ts), so
 * two uses race to one. A token sent by mail is made at the send: until then its row holds a
 * random stand-in for the hash, shared with its mail's outbox row (mintMailLinkToken).
 */
import type { MailLink, MailMessage } from '../mail-outbox.js'
import type { Queryable } from '../pool.js'
import { lockUserForChange } from './users.js'

export type AccountTokenPurpose = 'password_reset' | 'verify_email'

export async function insertAccountToken (db: Queryable, token: { tokenHash: Buffer, purpose: AccountTokenPurpose, userId: string, ttlSeconds: number }): Promise<void> {
  await db.query(
    'INSERT INTO account_tokens (token_hash, purpose, user_id, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))',
    [token.tokenHash, token.purpose, token.userId, token.ttlSeconds])
}

/** A token and its mail (the token's hash is its link's) for the email's account, if any, in one statement: an unknown email costs the same. True when it wrote. */
export async function issueTokenWithMail (db: Queryable, input: {
  email: string
  purpose: AccountTokenPurpose
  ttlSeconds: number
  onlyUnverified: boolean
  mail: MailMessage & { link: MailLink }
}): Promise<boolean> {
  const { rows } = await db.query<{ issued: number }>(
    `WITH account AS (
       SELECT id FROM users WHERE email = $1 AND (NOT $7::boolean OR email_verified_at IS NULL)
     ), token AS (
       INSERT INTO account_tokens (token_hash, purpose, user_id, expires_at)
       SELECT $2, $3, id, now() + make_interval(secs => $4) FROM account
     ), mail AS (
       INSERT INTO mail_outbox (kind, recipient, subject, body_text, link_url, link_token_hash) SELECT $5, $1, $6, $8, $9, $2 FROM account
     )
     SELECT count(*)::int AS issued FROM account`,
    [input.email, input.mail.link.tokenHash, input.purpose, input.ttlSeconds, input.mail.kind, input.mail.subject, input.onlyUnverified, input.mail.text, input.mail.link.url])
  return (rows[0]?.issued ?? 0) > 0
}

/**
 * At a mail's send: its account token is stored under `next` (the hash of the token the send is
 * about to carry) instead of `current`, in the token's row and the mail's, if the token is still
 * live. False when it is not (used, expired, its account deleted): the mail has nothing to send.
 * A retry makes another token, so a link sent by an attempt that seemed to fail stops working.
 * Locks the token's row, then the mail's, as an account's deletion does.
 */
export async function mintMailLinkToken (db: Queryable, mail: { id: number, current: Buffer, next: Buffer }): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH minted AS (
       UPDATE account_tokens SET token_hash = $3 WHERE token_hash = $2 AND used_at IS NULL AND expires_at > now() RETURNING token_hash
     )
     UPDATE mail_outbox SET link_token_hash = minted.token_hash FROM minted WHERE mail_outbox.id = $1 AND mail_outbox.link_token_hash = $2`,
    [mail.id, mail.current, mail.next])
  return rowCount === 1
}

/**
 * Spends the live token of this purpose; returns its user, or undefined (unknown, used, expired,
 * user gone). In a transaction: the user row is locked, then the user's tokens of the purpose,
 * and the token checked again under them, so a concurrent use of any link waits, then finds it used.
 */
export async function spendAccountToken (db: Queryable, tokenHash: Buffer, purpose: AccountTokenPurpose): Promise<string | undefined> {
  const { rows: owners } = await db.query<{ user_id: string }>(
    'SELECT user_id FROM account_tokens WHERE token_hash = $1 AND purpose = $2', [tokenHash, purpose])
  const userId = owners[0]?.user_id
  if (userId === undefined || !await lockUserForChange(db, userId)) return undefined
  const locked = await lockAccountTokens(db, userId, purpose)
  if (locked.find((token) => token.tokenHash.equals(tokenHash))?.live !== true) return undefined
  await db.query('UPDATE account_tokens SET used_at = now() WHERE token_hash = $1', [tokenHash])
  return userId
}

/** Locks the user's tokens of this purpose in token_hash order (with the user row locked); each with whether it is live. */
async function lockAccountTokens (db: Queryable, userId: string, purpose: AccountTokenPurpose): Promise<Array<{ tokenHash: Buffer, live: boolean }>> {
  const { rows } = await db.query<{ token_hash: Buffer, live: boolean }>(
    `SELECT token_hash, (used_at IS NULL AND expires_at > now()) AS live
       FROM account_tokens WHERE user_id = $1 AND purpose = $2 ORDER BY token_hash FOR UPDATE`,
    [userId, purpose])
  return rows.map((row) => ({ tokenHash: row.token_hash, live: row.live }))
}

/** Whether the token is live now (no lock): a cheap check before the hash it would cost. */
export async function isLiveAccountToken (db: Queryable, tokenHash: Buffer, purpose: AccountTokenPurpose): Promise<boolean> {
  const { rows } = await db.query(
    'SELECT 1 FROM account_tokens WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > now()',
    [tokenHash, purpose])
  return rows.length > 0
}

/** Spends every live token of the user for this purpose (with the user row locked). */
export async function spendAllAccountTokens (db: Queryable, userId: string, purpose: AccountTokenPurpose): Promise<void> {
  await db.query('UPDATE account_tokens SET used_at = now() WHERE user_id = $1 AND purpose = $2 AND used_at IS NULL', [userId, purpose])
}
