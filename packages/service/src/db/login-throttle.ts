/**
 * Failed-login counts per account and per client address (table login_failures). Every
 * write is one atomic upsert, so replicas sharing the database count together; the rules
 * (windows, delays) live in src/server/login-throttle.ts, and times come from the caller's
 * clock, never the database's now().
 */
import type { Queryable } from './pool.js'

export type ThrottleScope = 'account' | 'address'

/** One key's stored count; times in epoch milliseconds. */
export interface FailureCount {
  failures: number
  windowStartedAt: number
  lastFailureAt: number
}

export interface ThrottleKeys {
  /** The normalised email. */
  account: string
  /** The client address key. */
  address: string
}

export type FailureCounts = Partial<Record<ThrottleScope, FailureCount>>

interface FailureRow {
  scope: ThrottleScope
  failures: number
  window_started_at: Date
  last_failure_at: Date
}

/** One key's count from its stored columns. */
export function toFailureCount (row: { failures: number, window_started_at: Date, last_failure_at: Date }): FailureCount {
  return { failures: row.failures, windowStartedAt: row.window_started_at.getTime(), lastFailureAt: row.last_failure_at.getTime() }
}

function toCounts (rows: FailureRow[]): FailureCounts {
  const counts: FailureCounts = {}
  for (const row of rows) counts[row.scope] = toFailureCount(row)
  return counts
}

/** Both keys' rows in one query; a key with no row is absent. Expired rows are returned as stored. */
export async function readFailures (db: Queryable, keys: ThrottleKeys): Promise<FailureCounts> {
  const { rows } = await db.query<FailureRow>(
    `SELECT scope, failures, window_started_at, last_failure_at FROM login_failures
      WHERE (scope = 'account' AND key = $1) OR (scope = 'address' AND key = $2)`,
    [keys.account, keys.address])
  return toCounts(rows)
}

/**
 * Counts one failure for both keys in one statement: a new row, one more in a live window, or
 * a new window in place of one that started at or before `windowExpiredAtOrBefore`. The rows
 * are always locked in the same order (account, then address), so concurrent failures queue
 * rather than deadlock. Returns both keys' counts after this failure.
 */
export async function recordFailure (db: Queryable, keys: ThrottleKeys, at: { nowMs: number, windowExpiredAtOrBefore: number }): Promise<FailureCounts> {
  const { rows } = await db.query<FailureRow>(
    `INSERT INTO login_failures AS f (scope, key, failures, window_started_at, last_failure_at)
     VALUES ('account', $1, 1, $3, $3), ('address', $2, 1, $3, $3)
     ON CONFLICT (scope, key) DO UPDATE SET
       failures = CASE WHEN f.window_started_at <= $4 THEN 1 ELSE f.failures + 1 END,
       window_started_at = CASE WHEN f.window_started_at <= $4 THEN EXCLUDED.window_started_at ELSE f.window_started_at END,
       last_failure_at = EXCLUDED.last_failure_at
     RETURNING scope, failures, window_started_at, last_failure_at`,
    [keys.account, keys.address, new Date(at.nowMs), new Date(at.windowExpiredAtOrBefore)])
  return toCounts(rows)
}

/** A successful login forgets the account's failures (never the address's). */
export async function resetAccountFailures (db: Queryable, account: string): Promise<void> {
  await db.query("DELETE FROM login_failures WHERE scope = 'account' AND key = $1", [account])
}
