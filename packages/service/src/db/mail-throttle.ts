/**
 * Requests that send account mail, counted per account (the normalised email, known or not)
 * and per client address, in a fixed window from each key's first request (table
 * mail_requests). One atomic upsert per request, so replicas count together.
 */
import type { Queryable } from './pool.js'

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
