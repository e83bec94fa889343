/**
 * What a login reads before its hash, in one statement: the user of the email (if any) and the
 * throttle's failure counts of both keys. One pooled checkout and one round trip where
 * findUserByEmail and readFailures in parallel took two of each: every query wakes a
 * PostgreSQL backend, which on a small machine takes a core from the event loop.
 */
import type { Queryable } from './pool.js'
import { toFailureCount, type FailureCounts, type ThrottleKeys } from './login-throttle.js'
import { toUser, userColumns, type UserRow, type UserWithHash } from './users.js'

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

/**
 * Always one row: each LEFT JOIN matches at most one (users.email and login_failures' primary
 * key are unique). The same snapshot for all three, and no lock taken.
 */
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
