/**
 * The transactional outbox (table mail_outbox): a message is inserted with the change that
 * causes it, in the same transaction, and sent later by the dispatcher (mail/dispatcher.ts). Rows are
 * claimed with FOR UPDATE SKIP LOCKED and leased (next_attempt_at moves past the send), so
 * replicas sharing the database never send one message twice. Sending claims one row per
 * statement, so a lease covers one send, never a queue of them.
 */
import type { Queryable } from './pool.js'

type MailKind = 'verify_email' | 'password_reset' | 'registration_attempt' | 'test'

export interface MailMessage {
  kind: MailKind
  recipient: string
  subject: string
  text: string
}

export interface ClaimedMail extends MailMessage {
  id: number
  /** This attempt's number, from 1. */
  attempt: number
}

export async function enqueueMail (db: Queryable, message: MailMessage): Promise<void> {
  await db.query('INSERT INTO mail_outbox (kind, recipient, subject, body_text) VALUES ($1, $2, $3, $4)',
    [message.kind, message.recipient, message.subject, message.text])
}

interface ClaimedRow { id: number, kind: MailKind, recipient: string, subject: string, body_text: string | null, attempts: number }

function toClaimed (row: ClaimedRow): ClaimedMail {
  return { id: row.id, kind: row.kind, recipient: row.recipient, subject: row.subject, text: row.body_text ?? '', attempt: row.attempts }
}

/**
 * Claims up to `limit` due messages in one statement: each is locked (rows another replica is
 * claiming are skipped), counted as an attempt, and leased for `leaseMs`, so nobody else claims
 * it while it is being sent; a replica that dies mid-send leaves it to be retried after the lease.
 */
export async function claimDueMail (db: Queryable, limit: number, leaseMs: number): Promise<ClaimedMail[]> {
  const { rows } = await db.query<ClaimedRow>(
    `UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => $2::double precision / 1000)
      WHERE id IN (SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= now()
                    ORDER BY next_attempt_at, id LIMIT $1 FOR UPDATE SKIP LOCKED)
      RETURNING id, kind, recipient, subject, body_text, attempts`,
    [limit, leaseMs])
  return rows.map(toClaimed).sort((a, b) => a.id - b.id)
}

/**
 * Hands back a claimed message that was not sent (the dispatcher closed between the claim and
 * the send): due again now, the attempt not counted. Only while still pending.
 */
export async function releaseClaim (db: Queryable, id: number): Promise<void> {
  await db.query("UPDATE mail_outbox SET attempts = attempts - 1, next_attempt_at = now() WHERE id = $1 AND status = 'pending' AND attempts > 0", [id])
}

/**
 * Without an SMTP server: claims due messages and marks them `logged` in one statement (the
 * caller writes them to the log). With `keepText` the text is kept (and returned), so it can be
 * read from the table too; without, it is cleared like a sent mail's and the rows come back
 * without it.
 */
export async function claimForLog (db: Queryable, limit: number, keepText: boolean): Promise<ClaimedMail[]> {
  const { rows } = await db.query<ClaimedRow>(
    `UPDATE mail_outbox SET attempts = attempts + 1, status = 'logged', finished_at = now(),
            body_text = CASE WHEN $2::boolean THEN body_text END
      WHERE id IN (SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= now()
                    ORDER BY next_attempt_at, id LIMIT $1 FOR UPDATE SKIP LOCKED)
      RETURNING id, kind, recipient, subject, body_text, attempts`,
    [limit, keepText])
  return rows.map(toClaimed).sort((a, b) => a.id - b.id)
}

/**
 * Clears the text of every mail already logged (links included), once, by a service that does
 * not log links, so no live link is left readable in the table. Returns how many rows it cleared.
 */
export async function clearLoggedTexts (db: Queryable): Promise<number> {
  const { rowCount } = await db.query("UPDATE mail_outbox SET body_text = NULL WHERE status = 'logged' AND body_text IS NOT NULL")
  return rowCount ?? 0
}

/** Sent: the text (a live link) is cleared. */
export async function markSent (db: Queryable, id: number): Promise<void> {
  await db.query("UPDATE mail_outbox SET status = 'sent', finished_at = now(), body_text = NULL, last_error = NULL WHERE id = $1", [id])
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
 * Requests that send account mail, counted per account (the normalised email, known or not)
 * and per client address, in a fixed window from each key's first request (table
 * mail_requests). One atomic upsert per request, so replicas count together.
 */
export type MailRequestScope = 'account' | 'address'

export interface MailRequestCount {
  requests: number
  /** Seconds until the key's window ends (at least 1). */
  windowEndsInSeconds: number
}

/** Counts one request for each key, in one statement; returns each key's count after it. */
export async function countMailRequest (db: Queryable, keys: Partial<Record<MailRequestScope, string>>, windowSeconds: number): Promise<Partial<Record<MailRequestScope, MailRequestCount>>> {
  const entries = (['account', 'address'] as const).flatMap((scope) => (keys[scope] === undefined ? [] : [[scope, keys[scope]] as const]))
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
