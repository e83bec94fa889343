/**
 * What login throttling keeps (table login_failures, migrations 002 and 007): failed logins per
 * account, per client address and per known device; the leases of password checks under way on an
 * account; known devices (table devices); registrations per client and per address (table
 * registration_requests). Every write is one atomic statement, so replicas count together; the
 * rules live in accounts/login-throttle.ts, and times come from the caller's clock.
 */
import type { Queryable } from '../pool.js'
import { toUser, userColumns, type UserRow, type UserWithHash } from './users.js'
import type { SecondFactors } from './second-factors.js'

export type ThrottleScope = 'account' | 'address' | 'device'

/** One key's stored count; times in epoch milliseconds. */
export interface FailureCount {
  failures: number
  windowStartedAt: number
  lastFailureAt: number
}

/**
 * The keys a password check is counted under: an unknown client's account (the normalised email)
 * and address (its key, IPv6 by /64); a known device's token hash alone.
 */
export type ThrottleKeys = Partial<Record<ThrottleScope, string>>

export type FailureCounts = Partial<Record<ThrottleScope, FailureCount>>

/** The time bounds of one write: now, and the moment at or before which a window is over. */
export interface ThrottleClock {
  nowMs: number
  windowExpiredAtOrBefore: number
}

interface FailureRow {
  scope: ThrottleScope
  failures: number
  window_started_at: Date
  last_failure_at: Date
}

function toFailureCount (row: { failures: number, window_started_at: Date, last_failure_at: Date }): FailureCount {
  return { failures: row.failures, windowStartedAt: row.window_started_at.getTime(), lastFailureAt: row.last_failure_at.getTime() }
}

function toCounts (rows: FailureRow[]): FailureCounts {
  const counts: FailureCounts = {}
  for (const row of rows) if (row.failures > 0) counts[row.scope] = toFailureCount(row)
  return counts
}

/** The present keys as [scope, key] pairs, in the lock order of every write: account, address, device. */
function entries (keys: ThrottleKeys): Array<[ThrottleScope, string]> {
  return (['account', 'address', 'device'] as const).flatMap((scope) => (keys[scope] === undefined ? [] : [[scope, keys[scope]] as [ThrottleScope, string]]))
}

/** `VALUES` rows ($n, $n+1, ...) for `pairs`, from parameter `first` on. */
function valuesOf (pairs: Array<[ThrottleScope, string]>, first: number, extra: string): string {
  return pairs.map((_, i) => `($${first + 2 * i}, $${first + 2 * i + 1}${extra})`).join(', ')
}

/** The keys' counts in one query; a key with no row (or none failed) is absent. Expired rows are returned as stored. */
export async function readFailures (db: Queryable, keys: ThrottleKeys): Promise<FailureCounts> {
  const pairs = entries(keys)
  if (pairs.length === 0) return {}
  const { rows } = await db.query<FailureRow>(
    `SELECT f.scope, f.failures, f.window_started_at, f.last_failure_at
       FROM login_failures f JOIN (VALUES ${valuesOf(pairs, 1, '')}) AS k (scope, key) ON f.scope = k.scope AND f.key = k.key`,
    pairs.flat())
  return toCounts(rows)
}

/**
 * Counts one failure for each key in one statement (a new window where the old one is over, or
 * where the row held no failure yet), locking the rows in one order so concurrent failures queue
 * rather than deadlock, and gives back the check's lease on the account, if it held one. Returns
 * the counts.
 */
export async function recordFailure (db: Queryable, keys: ThrottleKeys, at: ThrottleClock, lease?: string): Promise<FailureCounts> {
  const pairs = entries(keys)
  if (pairs.length === 0) return {}
  const { rows } = await db.query<FailureRow>(
    `INSERT INTO login_failures AS f (scope, key, failures, window_started_at, last_failure_at)
     VALUES ${valuesOf(pairs, 4, ', 1, $1::timestamptz, $1::timestamptz')}
     ON CONFLICT (scope, key) DO UPDATE SET
       failures = CASE WHEN f.window_started_at <= $2 OR f.failures = 0 THEN 1 ELSE f.failures + 1 END,
       window_started_at = CASE WHEN f.window_started_at <= $2 OR f.failures = 0 THEN EXCLUDED.window_started_at ELSE f.window_started_at END,
       last_failure_at = EXCLUDED.last_failure_at,
       checks = CASE WHEN f.scope = 'account' AND $3::timestamptz IS NOT NULL THEN array_remove(f.checks, $3::timestamptz) ELSE f.checks END
     RETURNING scope, failures, window_started_at, last_failure_at`,
    [new Date(at.nowMs), new Date(at.windowExpiredAtOrBefore), lease ?? null, ...pairs.flat()])
  return toCounts(rows)
}

/**
 * A successful check forgets the account's failures (never the address's) and gives back its
 * lease, in one statement. Returns the account's count as it was (undefined: no row, or none).
 */
export async function resetAccountFailures (db: Queryable, account: string, lease?: string): Promise<FailureCount | undefined> {
  const { rows } = await db.query<FailureRow>(
    `WITH before AS (SELECT failures, window_started_at, last_failure_at FROM login_failures WHERE scope = 'account' AND key = $1 FOR UPDATE)
     UPDATE login_failures AS f SET failures = 0, checks = CASE WHEN $2::timestamptz IS NULL THEN f.checks ELSE array_remove(f.checks, $2::timestamptz) END
       FROM before WHERE f.scope = 'account' AND f.key = $1
     RETURNING 'account' AS scope, before.failures, before.window_started_at, before.last_failure_at`,
    [account, lease ?? null])
  return toCounts(rows).account
}

/**
 * Locks the key's row for the rest of the caller's transaction, made (with no failure) when
 * missing: checks of one key serialise across replicas, each seeing the outcome of the one before.
 */
export async function lockFailureRow (db: Queryable, scope: ThrottleScope, key: string, now: Date): Promise<void> {
  await db.query('INSERT INTO login_failures (scope, key, failures, window_started_at, last_failure_at) VALUES ($1, $2, 0, $3, $3) ON CONFLICT (scope, key) DO NOTHING', [scope, key, now])
  await db.query('SELECT 1 FROM login_failures WHERE scope = $1 AND key = $2 FOR UPDATE', [scope, key])
}

/** A known device's successful check forgets its own failures. */
export async function resetDeviceFailures (db: Queryable, device: string): Promise<void> {
  await db.query("DELETE FROM login_failures WHERE scope = 'device' AND key = $1", [device])
}

/**
 * Takes a lease on the account's checks under way, shared by every process: granted while the
 * leases still running are fewer than the free failures the account has left (`bound` less its
 * live failures), or than one once it has none left (past them, its delays pace it, one check at a
 * time); refused past it. One atomic statement: the row is locked, so two processes cannot both
 * take the last room. A grant returns the account's count as it stands under that lock, for the
 * caller to decide on again: the count it read before may have been overtaken.
 */
export async function claimCheck (db: Queryable, account: string, lease: string, bound: number, at: ThrottleClock): Promise<{ granted: false } | { granted: true, count: FailureCount | undefined }> {
  const { rows } = await db.query<FailureRow>(
    `INSERT INTO login_failures AS f (scope, key, failures, window_started_at, last_failure_at, checks)
     VALUES ('account', $1, 0, $2, $2, ARRAY[$3::timestamptz])
     ON CONFLICT (scope, key) DO UPDATE SET
       checks = array_append(ARRAY(SELECT c FROM unnest(f.checks) AS c WHERE c > $2), $3::timestamptz)
     WHERE cardinality(ARRAY(SELECT c FROM unnest(f.checks) AS c WHERE c > $2))
         < greatest(1, $5 - CASE WHEN f.window_started_at <= $4 THEN 0 ELSE f.failures END)
     RETURNING scope, failures, window_started_at, last_failure_at`,
    [account, new Date(at.nowMs), lease, new Date(at.windowExpiredAtOrBefore), bound])
  if (rows.length === 0) return { granted: false }
  return { granted: true, count: toCounts(rows).account }
}

/** Gives back a lease that no outcome's write gave back (the check ended without a verdict). */
export async function releaseCheck (db: Queryable, account: string, lease: string): Promise<void> {
  await db.query("UPDATE login_failures SET checks = array_remove(checks, $2::timestamptz) WHERE scope = 'account' AND key = $1", [account, lease])
}

/**
 * Marks the account's owner as told of the throttling, at most once per `intervalSeconds`: true
 * when this call is the one that should tell them.
 */
export async function markAlerted (db: Queryable, account: string, intervalSeconds: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE login_failures SET alerted_at = now()
      WHERE scope = 'account' AND key = $1 AND (alerted_at IS NULL OR alerted_at <= now() - make_interval(secs => $2))`,
    [account, intervalSeconds])
  return rowCount === 1
}

/**
 * What a login reads before its hash, in one statement: the user of the email (if any), the
 * counts of its keys, whether the device token it presented is one of that user's, and how many
 * accounts signed in from its address in the window (the address bound grows with them). One
 * checkout and one round trip.
 */
export interface LoginLookup {
  user: UserWithHash | undefined
  failures: FailureCounts
  /** The presented device token belongs to the user and has not expired. */
  knownDevice: boolean
  /**
   * Accounts with a session opened from the client's address since the window's start; undefined
   * when not counted, the address's recorded failures being below `countAddressAccountsFrom`.
   */
  addressAccounts: number | undefined
  /** The user's confirmed second factors (second-factors.ts), so a login decides on its second step with no other round trip. */
  secondFactors: SecondFactors
}

/** The user's columns, all null when there is none; each scope's count, all null when it has no row. */
type UserColumns = { [K in keyof UserRow]: UserRow[K] | null }
type CountColumns = Record<`${ThrottleScope}_failures`, number | null> & Record<`${ThrottleScope}_window_started_at` | `${ThrottleScope}_last_failure_at`, Date | null>
type LookupRow = UserColumns & CountColumns & { known_device: boolean, address_accounts: number | null, totp_confirmed: boolean, recovery_codes_left: number }

/** Always one row (each LEFT JOIN matches at most one): one snapshot, no lock. */
const lookupSql = `
  SELECT u.*,
         a.failures AS account_failures, a.window_started_at AS account_window_started_at, a.last_failure_at AS account_last_failure_at,
         d.failures AS address_failures, d.window_started_at AS address_window_started_at, d.last_failure_at AS address_last_failure_at,
         v.failures AS device_failures, v.window_started_at AS device_window_started_at, v.last_failure_at AS device_last_failure_at,
         EXISTS (SELECT 1 FROM devices dv WHERE dv.token_hash = $5 AND dv.user_id = u.id AND dv.expires_at > now()) AS known_device,
         -- Only where it can matter: a scan of every session the address opened in the window, which
         -- behind a NAT or an untrusted proxy is every login's.
         CASE WHEN coalesce(d.failures, 0) >= $8
           THEN (SELECT count(DISTINCT s.user_id) FROM sessions s WHERE s.address = $6 AND s.created_at > $7)::int
         END AS address_accounts,
         EXISTS (SELECT 1 FROM totp_factors t WHERE t.user_id = u.id AND t.confirmed_at IS NOT NULL) AS totp_confirmed,
         (SELECT count(*) FROM recovery_codes r WHERE r.user_id = u.id AND r.used_at IS NULL)::int AS recovery_codes_left
    FROM (SELECT 1) AS one
    LEFT JOIN (SELECT ${userColumns} FROM users WHERE email = $1) AS u ON true
    LEFT JOIN login_failures a ON a.scope = 'account' AND a.key = $2
    LEFT JOIN login_failures d ON d.scope = 'address' AND d.key = $3
    LEFT JOIN login_failures v ON v.scope = 'device' AND v.key = $4`

/**
 * The login's lookup for `email`, the client's keys, the SHA-256 of the device token it presented
 * (if any), its address as sessions record it, and when the window started; expired counts are
 * returned as stored. The address's accounts are counted where its recorded failures reach
 * `countAddressAccountsFrom` (0: always).
 */
export async function lookUpLogin (db: Queryable, email: string, keys: { account: string, address: string, device?: string | undefined }, from: { sessionAddress: string | null, windowStartedAfter: number, countAddressAccountsFrom: number }): Promise<LoginLookup> {
  const deviceHash = keys.device === undefined ? null : Buffer.from(keys.device, 'hex')
  const { rows } = await db.query<LookupRow>(lookupSql, [email, keys.account, keys.address, keys.device ?? '', deviceHash, from.sessionAddress, new Date(from.windowStartedAfter), from.countAddressAccountsFrom])
  const row = rows[0]
  if (row === undefined) throw new Error('the login lookup returned no row')
  const failures: FailureCounts = {}
  for (const scope of ['account', 'address', 'device'] as const) {
    const count = row[`${scope}_failures`]
    const windowStartedAt = row[`${scope}_window_started_at`]
    const lastFailureAt = row[`${scope}_last_failure_at`]
    if (count !== null && count > 0 && windowStartedAt !== null && lastFailureAt !== null) {
      failures[scope] = toFailureCount({ failures: count, window_started_at: windowStartedAt, last_failure_at: lastFailureAt })
    }
  }
  const user = row.id === null ? undefined : toUser(row as UserRow)
  return { user, failures, knownDevice: user !== undefined && row.known_device, addressAccounts: row.address_accounts ?? undefined, secondFactors: { totp: row.totp_confirmed, recoveryCodesLeft: row.recovery_codes_left } }
}

/** Forgets every device of the user: none of them is judged apart from the account any more. */
export async function forgetDevices (db: Queryable, userId: string): Promise<number> {
  return (await db.query('DELETE FROM devices WHERE user_id = $1', [userId])).rowCount ?? 0
}

/** `client` and `account`: account registrations; `oidc-client`: the provider's dynamic client registrations (by address). */
export type RegistrationScope = 'client' | 'account' | 'oidc-client'

export interface RegistrationCount { requests: number, windowEndsInSeconds: number }

/** A registration counted for each key in its window; returns each count and the seconds until its window ends. */
export async function countRegistration<Scope extends RegistrationScope> (db: Queryable, keys: Record<Scope, string>, windowSeconds: number): Promise<Record<Scope, RegistrationCount>> {
  const scopes = Object.keys(keys) as Scope[]
  const { rows } = await db.query<{ scope: Scope, requests: number, ends_in: number }>(
    `INSERT INTO registration_requests AS r (scope, key, requests, window_started_at) SELECT scope, key, 1, now() FROM unnest($2::text[], $3::text[]) AS k (scope, key)
     ON CONFLICT (scope, key) DO UPDATE SET
       requests = CASE WHEN r.window_started_at <= now() - make_interval(secs => $1) THEN 1 ELSE r.requests + 1 END,
       window_started_at = CASE WHEN r.window_started_at <= now() - make_interval(secs => $1) THEN now() ELSE r.window_started_at END
     RETURNING scope, requests, greatest(1, ceil(extract(epoch FROM r.window_started_at + make_interval(secs => $1) - now())))::int AS ends_in`,
    [windowSeconds, scopes, scopes.map((scope) => keys[scope])])
  const counts = Object.fromEntries(scopes.map((scope) => [scope, { requests: 1, windowEndsInSeconds: 1 }])) as Record<Scope, RegistrationCount>
  for (const row of rows) counts[row.scope] = { requests: row.requests, windowEndsInSeconds: row.ends_in }
  return counts
}
