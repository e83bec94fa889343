import type { Queryable } from './pool.js'

// provisional: replaced by the sessions part at merge
/** Revokes every live session of the user (every refresh token); returns how many rows it revoked. `except` is ignored here. */
export async function revokeAllSessions (db: Queryable, userId: string, _options?: { except?: string }): Promise<number> {
  const result = await db.query('UPDATE refresh_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL', [userId])
  return result.rowCount ?? 0
}
