/**
 * Failed-login counts per account and per client address (table login_failures), and the login's
 * lookup that reads them. Every write is one atomic upsert, so replicas count together; the rules
 * live in accounts/login-throttle.ts, and times come from the caller's clock, never now().
 */
import type { Queryable } from './pool.js'
import { toUser, userColumns, type UserRow, type UserWithHash } from './users.js'

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
function toFailureCount (row: { failures: number, window_started_at: Date, last_failure_at: Date }): FailureCount {
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
 * Counts one failure for both keys in one statement (a new window where the old one expired),
 * locking account then address, so concurrent failures queue rather than deadlock. Returns both counts.
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

/**
 * What a login reads before its hash, in one statement: the user of the email (if any) and both
 * keys' failure counts. One checkout and one round trip, not two: every query wakes a PostgreSQL
 * backend, which on a small machine takes a core from the event loop.
 */
export interface LoginLookup {
  user: UserWithHash | undefined
  failures: FailureCounts
}

/** The user's columns, all null when there is none; each scope's count, all null when it has no row. */
type LookupRow = { [K in keyof UserRow]: UserRow[K] | null } & {
  account_failures: number | null
  account_window_started_at: Date | null
  account_last_failure_at: Date | null
  address_failures: number | null
  address_window_started_at: Date | null
  address_last_failure_at: Date | null
}

/** Always one row (each LEFT JOIN matches at most one): one snapshot, no lock. */
const lookupSql = `
  SELECT u.*,
         a.failures AS account_failures, a.window_started_at AS account_window_started_at, a.last_failure_at AS account_last_failure_at,
         d.failures AS address_failures, d.window_started_at AS address_window_started_at, d.last_failure_at AS address_last_failure_at
    FROM (SELECT 1) AS one
    LEFT JOIN (SELECT ${userColumns} FROM users WHERE email = $1) AS u ON true
    LEFT JOIN login_failures a ON a.scope = 'account' AND a.key = $2
    LEFT JOIN login_failures d ON d.scope = 'address' AND d.key = $3`

/** The user of the (normalised) email and both keys' failure counts; expired counts are returned as stored. */
export async function lookUpLogin (db: Queryable, email: string, keys: ThrottleKeys): Promise<LoginLookup> {
  const { rows } = await db.query<LookupRow>(lookupSql, [email, keys.account, keys.address])
  const row = rows[0]
  if (row === undefined) throw new Error('the login lookup returned no row')
  const failures: FailureCounts = {}
  for (const scope of ['account', 'address'] as const) {
    const count = row[`${scope}_failures`]
    const windowStartedAt = row[`${scope}_window_started_at`]
    const lastFailureAt = row[`${scope}_last_failure_at`]
    if (count !== null && windowStartedAt !== null && lastFailureAt !== null) {
      failures[scope] = toFailureCount({ failures: count, window_started_at: windowStartedAt, last_failure_at: lastFailureAt })
    }
  }
  const user = row.id === null ? undefined : toUser(row as UserRow)
  return { user, failures }
}
