/** An account and everything of it, gone in one transaction (DELETE /api/v1/me). */
import type pg from 'pg'
import { withTransaction } from './pool.js'
import { revokeAllSessionIds } from './sessions.js'

/**
 * The user's tables, each deleted explicitly (the foreign keys would cascade, but a table added
 * without one must not keep rows of a deleted account). Add a table here when it holds the user's rows.
 */
const userRows: ReadonlyArray<{ table: string, column: string }> = [
  { table: 'posts', column: 'author_id' },
  { table: 'refresh_tokens', column: 'user_id' },
  { table: 'sessions', column: 'user_id' },
]

/**
 * Deletes the user and all their rows; returns the ids of the sessions that ended. The user row is
 * locked first, then the sessions (revoked and locked, the order every writer of sessions keeps),
 * so a refresh running at the same moment either finished before or finds nothing afterwards.
 * False as the first value when the user was already gone.
 */
export async function deleteAccount (pool: pg.Pool, userId: string): Promise<{ deleted: boolean, sessionIds: string[] }> {
  return await withTransaction(pool, async (client) => {
    const { rows } = await client.query('SELECT id FROM users WHERE id = $1 FOR UPDATE', [userId])
    if (rows.length === 0) return { deleted: false, sessionIds: [] }
    const sessionIds = await revokeAllSessionIds(client, userId, { reason: 'account_deleted' })
    for (const { table, column } of userRows) {
      await client.query(`DELETE FROM ${table} WHERE ${column} = $1`, [userId])
    }
    await client.query('DELETE FROM users WHERE id = $1', [userId])
    return { deleted: true, sessionIds }
  })
}
