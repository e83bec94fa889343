import type { Queryable } from './pool.js'

export interface RefreshTokenRow {
  id: string
  familyId: string
  userId: string
  expiresAt: Date
  rotatedAt: Date | null
  revokedAt: Date | null
}

export async function insertRefreshToken (db: Queryable, token: { tokenHash: Buffer, familyId: string, userId: string, expiresAt: Date }): Promise<void> {
  await db.query(
    'INSERT INTO refresh_tokens (token_hash, family_id, user_id, expires_at) VALUES ($1, $2, $3, $4)',
    [token.tokenHash, token.familyId, token.userId, token.expiresAt])
}

/** Locks the token's row for the rest of the transaction, so two refreshes of one token serialise. */
export async function lockRefreshToken (db: Queryable, tokenHash: Buffer): Promise<RefreshTokenRow | undefined> {
  const { rows } = await db.query<{ id: string, family_id: string, user_id: string, expires_at: Date, rotated_at: Date | null, revoked_at: Date | null }>(
    `SELECT id, family_id, user_id, expires_at, rotated_at, revoked_at
       FROM refresh_tokens WHERE token_hash = $1 FOR UPDATE`,
    [tokenHash])
  const row = rows[0]
  if (row === undefined) return undefined
  return { id: row.id, familyId: row.family_id, userId: row.user_id, expiresAt: row.expires_at, rotatedAt: row.rotated_at, revokedAt: row.revoked_at }
}

export async function markRotated (db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE refresh_tokens SET rotated_at = now() WHERE id = $1', [id])
}

export async function revokeFamily (db: Queryable, familyId: string): Promise<number> {
  const result = await db.query('UPDATE refresh_tokens SET revoked_at = now() WHERE family_id = $1 AND revoked_at IS NULL', [familyId])
  return result.rowCount ?? 0
}
