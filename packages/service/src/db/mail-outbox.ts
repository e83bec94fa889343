/**
 * The transactional outbox (table mail_outbox): a message is inserted in the transaction of the
 * change that causes it and sent later (mail/dispatcher.ts). Rows are claimed with FOR UPDATE SKIP
 * LOCKED and leased, so replicas never send one twice; and the mail requests' counts. No row holds
 * a live link: a link's token is made at the send (accounts/account-tokens.ts mintMailLinkToken).
 */
import type { Queryable } from './pool.js'

type MailKind = 'verify_email' | 'password_reset' | 'registration_attempt' | 'logins_throttled' | 'test'

/** A mail's link: the page it opens, and the hash its account token is stored under. */
export interface MailLink {
  /** The page without the token (`<TOLLBOOTH_PUBLIC_URL>/reset-password`); the send adds `?token=`. */
  url: string
  /** Until the first send, a random stand-in that no token hashes to; then the SHA-256 of the token last sent. */
  tokenHash: Buffer
}

export interface MailMessage {
  kind: MailKind
  recipient: string
  subject: string
  /** With a link, the text holds the link's place (mail/messages.ts), filled in at the send. */
  text: string
  link?: MailLink
}

export interface ClaimedMail extends MailMessage {
  id: number
  /** This attempt's number, from 1. */
  attempt: number
}

export async function enqueueMail (db: Queryable, message: MailMessage): Promise<void> {
  await db.query('INSERT INTO mail_outbox (kind, recipient, subject, body_text, link_url, link_token_hash) VALUES ($1, $2, $3, $4, $5, $6)',
    [message.kind, message.recipient, message.subject, message.text, message.link?.url ?? null, message.link?.tokenHash ?? null])
}

interface ClaimedRow { id: number, kind: MailKind, recipient: string, subject: string, body_text: string | null, link_url: string | null, link_token_hash: Buffer | null, attempts: number }

const claimedColumns = 'id, kind, recipient, subject, body_text, link_url, link_token_hash, attempts'

function toClaimed (row: ClaimedRow): ClaimedMail {
  const link = row.link_url === null || row.link_token_hash === null ? {} : { link: { url: row.link_url, tokenHash: row.link_token_hash } }
  return { id: row.id, kind: row.kind, recipient: row.recipient, subject: row.subject, text: row.body_text ?? '', attempt: row.attempts, ...link }
}

/** Claims up to `limit` due messages, each counted as an attempt and leased for `leaseMs` (retried after it if its sender dies). */
export async function claimDueMail (db: Queryable, limit: number, leaseMs: number): Promise<ClaimedMail[]> {
  const { rows } = await db.query<ClaimedRow>(
    `UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => $2::double precision / 1000)
      WHERE id IN (SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= now()
                    ORDER BY next_attempt_at, id LIMIT $1 FOR UPDATE SKIP LOCKED)
      RETURNING ${claimedColumns}`,
    [limit, leaseMs])
  return rows.map(toClaimed).sort((a, b) => a.id - b.id)
}

/** Hands back a claimed message the dispatcher closed before sending: due now, the attempt not counted. */
export async function releaseClaim (db: Queryable, id: number): Promise<void> {
  await db.query("UPDATE mail_outbox SET attempts = attempts - 1, next_attempt_at = now() WHERE id = $1 AND status = 'pending' AND attempts > 0", [id])
}

/** Without SMTP: claims due messages and marks them `logged` for the caller to log; their text is kept only with `keepText`. */
export async function claimForLog (db: Queryable, limit: number, keepText: boolean): Promise<ClaimedMail[]> {
  const { rows } = await db.query<ClaimedRow>(
    `UPDATE mail_outbox SET attempts = attempts + 1, status = 'logged', finished_at = now(),
            body_text = CASE WHEN $2::boolean THEN body_text END
      WHERE id IN (SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= now()
                    ORDER BY next_attempt_at, id LIMIT $1 FOR UPDATE SKIP LOCKED)
      RETURNING ${claimedColumns}`,
    [limit, keepText])
  return rows.map(toClaimed).sort((a, b) => a.id - b.id)
}

/** Sent: the text is cleared (the outbox keeps the record, not the message). */
export async function markSent (db: Queryable, id: number): Promise<void> {
  await db.query("UPDATE mail_outbox SET status = 'sent', finished_at = now(), body_text = NULL, last_error = NULL WHERE id = $1", [id])
}

/** Not sent and never to be: its link was used or expired first. */
export async function markSkipped (db: Queryable, id: number, reason: string): Promise<void> {
  await db.query("UPDATE mail_outbox SET status = 'skipped', finished_at = now(), body_text = NULL, last_error = $2 WHERE id = $1", [id, reason.slice(0, 500)])
}

/** A failed attempt: retried after `retryInMs`, or given up (`failed`, text cleared) when `giveUp`. */
export async function markAttemptFailed (db: Queryable, id: number, error: string, retry: { giveUp: boolean, retryInMs: number }): Promise<void> {
  if (retry.giveUp) {
    await db.query("UPDATE mail_outbox SET status = 'failed', finished_at = now(), body_text = NULL, last_error = $2 WHERE id = $1", [id, error.slice(0, 500)])
  } else {
    await db.query('UPDATE mail_outbox SET next_attempt_at = now() + make_interval(secs => $3::double precision / 1000), last_error = $2 WHERE id = $1',
      [id, error.slice(0, 500), retry.retryInMs])
  }
}

/**
 * Mail requests counted in a fixed window (table mail_requests) per account (the email), per
 * client address, and per mailbox (the email folded, mail/mailbox.ts); one upsert, so replicas count together.
 */
export type MailRequestScope = 'account' | 'address' | 'mailbox'

export interface MailRequestCount {
  requests: number
  /** Seconds until the key's window ends (at least 1). */
  windowEndsInSeconds: number
}

/** Counts one request for each key, in one statement; returns each key's count after it. */
export async function countMailRequest (db: Queryable, keys: Partial<Record<MailRequestScope, string>>, windowSeconds: number): Promise<Partial<Record<MailRequestScope, MailRequestCount>>> {
  const entries = (['account', 'address', 'mailbox'] as const).flatMap((scope) => (keys[scope] === undefined ? [] : [[scope, keys[scope]] as const]))
  if (entries.length === 0) return {}
  const values = entries.map((_, i) => `($${2 * i + 2}, $${2 * i + 3}, 1, now())`).join(', ')
  const { rows } = await db.query<{ scope: MailRequestScope, requests: number, ends_in: number }>(
    `INSERT INTO mail_requests AS r (scope, key, requests, window_started_at) VALUES ${values}
     ON CONFLICT (scope, key) DO UPDATE SET
       requests = CASE WHEN r.window_started_at <= now() - make_interval(secs => $1) THEN 1 ELSE r.requests + 1 END,
       window_started_at = CASE WHEN r.window_started_at <= now() - make_interval(secs => $1) THEN now() ELSE r.window_started_at END
     RETURNING scope, requests, greatest(1, ceil(extract(epoch FROM r.window_started_at + make_interval(secs => $1) - now())))::int AS ends_in`,
    [windowSeconds, ...entries.flat()])
  const counts: Partial<Record<MailRequestScope, MailRequestCount>> = {}
  for (const row of rows) counts[row.scope] = { requests: row.requests, windowEndsInSeconds: row.ends_in }
  return counts
}
