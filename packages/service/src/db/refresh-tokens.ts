import type { Queryable } from './pool.js'

export interface RefreshTokenRow {
  id: string
  familyId: string
  userId: string
  expiresAt: Date
  rotatedAt: Date | null
  revokedAt: Date | null
  /** The successor, sealed under a key derived from this token (src/server/refresh-successor.ts); null until rotated. */
  successorSealed: Buffer | null
  /** Milliseconds since rotated_at by the database's clock (the clock that set it); Infinity when not rotated. */
  rotatedMsAgo: number
}

export async function insertRefreshToken (db: Queryable, token: { tokenHash: Buffer, familyId: string, userId: string, expiresAt: Date }): Promise<void> {
  await db.query(
    'INSERT INTO refresh_tokens (token_hash, family_id, user_id, expires_at) VALUES ($1, $2, $3, $4)',
    [token.tokenHash, token.familyId, token.userId, token.expiresAt])
}

/** The family (session id) and user of a token, without locking: the first step of the session-then-token lock order. */
export async function findTokenFamily (db: Queryable, tokenHash: Buffer): Promise<{ familyId: string, userId: string } | undefined> {
  const { rows } = await db.query<{ family_id: string, user_id: string }>('SELECT family_id, user_id FROM refresh_tokens WHERE token_hash = $1', [tokenHash])
  const row = rows[0]
  return row === undefined ? undefined : { familyId: row.family_id, userId: row.user_id }
}

/** Locks the token's row for the rest of the transaction, so two refreshes of one token serialise. */
export async function lockRefreshToken (db: Queryable, tokenHash: Buffer): Promise<RefreshTokenRow | undefined> {
  const { rows } = await db.query<{ id: string, family_id: string, user_id: string, expires_at: Date, rotated_at: Date | null, revoked_at: Date | null, successor_sealed: Buffer | null, rotated_ms_ago: number | null }>(
    `SELECT id, family_id, user_id, expires_at, rotated_at, revoked_at, successor_sealed,
            (extract(epoch FROM clock_timestamp() - rotated_at) * 1000)::float8 AS rotated_ms_ago
       FROM refresh_tokens WHERE token_hash = $1 FOR UPDATE`,
    [tokenHash])
  const row = rows[0]
  if (row === undefined) return undefined
  return { id: row.id, familyId: row.family_id, userId: row.user_id, expiresAt: row.expires_at, rotatedAt: row.rotated_at, revokedAt: row.revoked_at, successorSealed: row.successor_sealed, rotatedMsAgo: row.rotated_ms_ago ?? Infinity }
}

export async function markRotated (db: Queryable, id: string, successorSealed: Buffer): Promise<void> {
  await db.query('UPDATE refresh_tokens SET rotated_at = now(), successor_sealed = $2 WHERE id = $1', [id, successorSealed])
}
