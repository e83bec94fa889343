/**
 * What the purge job deletes (accounts/purge-job.ts), one entry per kind of dead row. Each batch is
 * one short statement that skips locked rows, so replicas share the work without waiting.
 */
import type { Queryable } from './pool.js'

export interface PurgeTarget {
  /** Names the target in logs and counts. */
  name: string
  table: string
  /** A unique column to pick rows by. */
  key: string
  /** The SQL condition of a dead row (constant text, never input). */
  dead: string
}

export const purgeTargets: readonly PurgeTarget[] = [
  // Expired (rotated or not: a rotated token is kept until then, to detect its reuse) or revoked.
  { name: 'refresh_tokens', table: 'refresh_tokens', key: 'id', dead: 'expires_at <= now() OR revoked_at IS NOT NULL' },
  // Ended: revoked, past their absolute end, or without a refresh token that can still be used.
  {
    name: 'sessions',
    table: 'sessions',
    key: 'id',
    dead: `revoked_at IS NOT NULL OR expires_at <= now() OR NOT EXISTS (
             SELECT 1 FROM refresh_tokens t WHERE t.family_id = sessions.id AND t.revoked_at IS NULL AND t.expires_at > now())`,
  },
  // Reset and verification links: spent or expired (only their SHA-256 was ever stored).
  { name: 'account_tokens', table: 'account_tokens', key: 'token_hash', dead: 'used_at IS NOT NULL OR expires_at <= now()' },
  // Mails no longer pending (sent, logged, given up, skipped; their text already cleared), kept a week for inquiries.
  { name: 'mail_outbox', table: 'mail_outbox', key: 'id', dead: "status <> 'pending' AND finished_at <= now() - interval '7 days'" },
  // Mail-request counts whose window has ended (TOLLBOOTH_MAIL_THROTTLE_WINDOW_SECONDS is at most 7 days).
  // No single-column key: rows are picked by their physical address, stable while locked.
  { name: 'mail_requests', table: 'mail_requests', key: 'ctid', dead: "window_started_at <= now() - interval '7 days'" },
  // Failed-login counts (every email anyone typed, and client addresses) a week after their last
  // failure: past any window and wait (TOLLBOOTH_LOGIN_THROTTLE_WINDOW_SECONDS is at most 7 days,
  // a wait at most the window), so each counts as zero already. No index on the time: one would
  // make every failure's upsert a non-HOT update, to spare a scan per purge run.
  // A row with a check under way (a lease not yet run out) is live whatever its failures' age.
  { name: 'login_failures', table: 'login_failures', key: 'ctid', dead: "last_failure_at <= now() - interval '7 days' AND NOT EXISTS (SELECT 1 FROM unnest(checks) AS lease WHERE lease > now())" },
  // Known devices past their lifetime (TOLLBOOTH_DEVICE_TTL_DAYS, renewed at each sign-in).
  { name: 'devices', table: 'devices', key: 'token_hash', dead: 'expires_at <= now()' },
  // Second-step challenges of sign-ins past their end (a spent one is deleted as it is spent).
  { name: 'login_challenges', table: 'login_challenges', key: 'token_hash', dead: 'expires_at <= now()' },
  // Passkey ceremonies' challenges never answered (an answered one is deleted as it is spent).
  { name: 'passkey_challenges', table: 'passkey_challenges', key: 'challenge_hash', dead: 'expires_at <= now()' },
  // Registration counts whose window has ended (TOLLBOOTH_REGISTER_THROTTLE_WINDOW_SECONDS is at most 7 days).
  // The OpenID Connect provider's codes, tokens, grants, sessions and interactions past their expiry.
  { name: 'oidc_payloads', table: 'oidc_payloads', key: 'ctid', dead: 'expires_at <= now()' },
  { name: 'registration_requests', table: 'registration_requests', key: 'ctid', dead: "window_started_at <= now() - interval '7 days'" },
]

/** Deletes up to `batchSize` dead rows of the target; returns how many. */
export async function purgeBatch (db: Queryable, target: PurgeTarget, batchSize: number): Promise<number> {
  const result = await db.query(
    `DELETE FROM ${target.table} WHERE ${target.key} IN (
       SELECT ${target.key} FROM ${target.table} WHERE ${target.dead} LIMIT $1 FOR UPDATE SKIP LOCKED)`,
    [batchSize])
  return result.rowCount ?? 0
}
