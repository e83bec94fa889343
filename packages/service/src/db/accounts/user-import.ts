/**
 * Accounts imported from another system (accounts/import/): many rows a statement, each column
 * sent as one array parameter (unnest), so a batch of thousands is one round trip. An email
 * already present is left as it is (ON CONFLICT DO NOTHING): importing a file twice changes nothing.
 */
import type { MailMessage } from '../mail-outbox.js'
import type { Queryable } from '../pool.js'

export interface ImportedUser {
  /** Normalised as registration normalises it. */
  email: string
  name: string | null
  /** A hash in one of the stored forms the engine verifies. */
  passwordHash: string
  emailVerified: boolean
}

/** Inserts the users whose email is not taken; returns the inserted ones' ids by email (an email twice in one batch is inserted once). */
export async function insertImportedUsers (db: Queryable, users: readonly ImportedUser[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ id: string, email: string }>(
    `INSERT INTO users (email, name, password_hash, email_verified_at)
     SELECT email, name, password_hash, CASE WHEN verified THEN now() END
       FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[]) AS imported (email, name, password_hash, verified)
     ON CONFLICT (email) DO NOTHING
     RETURNING id, email`,
    [users.map((user) => user.email), users.map((user) => user.name), users.map((user) => user.passwordHash), users.map((user) => user.emailVerified)])
  return new Map(rows.map((row) => [row.email, row.id]))
}

/** Of these emails, those that have an account. */
export async function existingEmails (db: Queryable, emails: readonly string[]): Promise<Set<string>> {
  const { rows } = await db.query<{ email: string }>('SELECT email FROM users WHERE email = ANY($1::text[])', [emails])
  return new Set(rows.map((row) => row.email))
}

/** A password-reset link's token (its stand-in hash until the send) and its mail, for an imported account without a password. */
export interface ImportResetMail {
  userId: string
  ttlSeconds: number
  mail: MailMessage & { link: NonNullable<MailMessage['link']> }
}

/** The accounts' reset tokens and their mails, two statements for the whole batch. */
export async function queueImportResetMails (db: Queryable, resets: readonly ImportResetMail[]): Promise<void> {
  if (resets.length === 0) return
  await db.query(
    `INSERT INTO account_tokens (token_hash, purpose, user_id, expires_at)
     SELECT token_hash, 'password_reset', user_id, now() + make_interval(secs => ttl)
       FROM unnest($1::bytea[], $2::uuid[], $3::int[]) AS reset (token_hash, user_id, ttl)`,
    [resets.map((reset) => reset.mail.link.tokenHash), resets.map((reset) => reset.userId), resets.map((reset) => reset.ttlSeconds)])
  await db.query(
    `INSERT INTO mail_outbox (kind, recipient, subject, body_text, link_url, link_token_hash)
     SELECT kind, recipient, subject, body_text, link_url, link_token_hash
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[]) AS mail (kind, recipient, subject, body_text, link_url, link_token_hash)`,
    [resets.map((reset) => reset.mail.kind), resets.map((reset) => reset.mail.recipient), resets.map((reset) => reset.mail.subject),
      resets.map((reset) => reset.mail.text), resets.map((reset) => reset.mail.link.url), resets.map((reset) => reset.mail.link.tokenHash)])
}
