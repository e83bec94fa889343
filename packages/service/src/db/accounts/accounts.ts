/** An account and everything of it, its mail and throttle rows included, gone in one transaction (DELETE /api/v1/me). */
import type pg from 'pg'
import { withTransaction } from '../pool.js'
import { revokeAllSessionIds } from './sessions.js'

/**
 * The user's tables, each deleted explicitly (the foreign keys would cascade, but a table added
 * without one must not keep rows of a deleted account). Add a table here when it holds the user's rows.
 */
const userRows: ReadonlyArray<{ table: string, column: string }> = [
  { table: 'posts', column: 'author_id' },
  { table: 'refresh_tokens', column: 'user_id' },
  { table: 'sessions', column: 'user_id' },
  { table: 'account_tokens', column: 'user_id' },
  { table: 'login_challenges', column: 'user_id' },
  { table: 'recovery_codes', column: 'user_id' },
  { table: 'totp_factors', column: 'user_id' },
]

/**
 * Rows keyed by the account's email: mail not yet sent (sent mail stays as the outbox's record
 * until the purge) and the account's throttle counts; the address's counts stay. The mail-request
 * count goes before the user row is locked, as a reset request locks them in that order; the
 * login failures after, as a reset locks the user row first.
 */
const beforeUserLock = "DELETE FROM mail_requests WHERE scope = 'account' AND key = $1"
const afterUserLock: readonly string[] = [
  "DELETE FROM mail_outbox WHERE recipient = $1 AND status = 'pending'",
  "DELETE FROM login_failures WHERE scope = 'account' AND key = $1",
]

/**
 * The lock order of an account's rows, kept by every transaction that locks more than one kind:
 * 0. the account's mail-request count (deleted here before anything else, see above);
 * 1. the users row: FOR UPDATE here; FOR NO KEY UPDATE (or an UPDATE) by a password change, a
 *    reset and a verification (users.ts lockUserForChange); FOR KEY SHARE by a refresh, before
 *    its session (lockUserKeyShare): the inserted token's foreign key takes that lock anyway, and
 *    taken only then, after the session, it would deadlock with this deletion;
 * 2. the sessions, in id order (sessions.ts);
 * 3. their refresh tokens, and the account tokens (all of a user's for a purpose in one statement,
 *    in token_hash order: account-tokens.ts).
 * One exception, safe by step 1: a reset locks its account tokens before it revokes the sessions;
 * every other transaction locking both holds the user row in a conflicting mode, so they never
 * interleave. Transactions that lock sessions without the user row touch no account token. The
 * purge job skips locked rows.
 *
 * Deletes the user and all their rows; returns the ids of the sessions that ended. A refresh, a
 * reset or a verification running meanwhile waits on the user row, then finds nothing. `deleted`
 * is false when the user was already gone.
 */
export async function deleteAccount (pool: pg.Pool, userId: string): Promise<{ deleted: boolean, sessionIds: string[] }> {
  return await withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ email: string }>('SELECT email FROM users WHERE id = $1', [userId])
    const email = rows[0]?.email
    if (email === undefined) return { deleted: false, sessionIds: [] }
    await client.query(beforeUserLock, [email])
    const { rowCount } = await client.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [userId])
    if (rowCount === 0) return { deleted: false, sessionIds: [] }
    const sessionIds = await revokeAllSessionIds(client, userId, { reason: 'account_deleted' })
    for (const { table, column } of userRows) {
      await client.query(`DELETE FROM ${table} WHERE ${column} = $1`, [userId])
    }
    for (const statement of afterUserLock) await client.query(statement, [email])
    await client.query('DELETE FROM users WHERE id = $1', [userId])
    return { deleted: true, sessionIds }
  })
}
