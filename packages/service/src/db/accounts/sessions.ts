/**
 * Sessions (table sessions): one row per refresh family, and their refresh tokens. Lock order
 * (accounts.ts states it whole): the user row, when taken, first; then the session; then its
 * tokens. A revocation takes the row FOR UPDATE, which waits for any transaction that inserted a
 * token of the session (its foreign key holds FOR KEY SHARE), so it sees that token too; a refresh
 * takes the row before it checks `revoked_at`, so it cannot insert after a revocation.
 */
import type { Queryable } from '../pool.js'

export interface SessionRow {
  id: string
  userId: string
  createdAt: Date
  lastUsedAt: Date
  expiresAt: Date
  userAgent: string | null
  address: string | null
  revokedAt: Date | null
  /** How it signed in (RFC 8176), carried by its access tokens. */
  amr: string[]
}

interface Row {
  id: string
  user_id: string
  created_at: Date
  last_used_at: Date
  expires_at: Date
  user_agent: string | null
  address: string | null
  revoked_at: Date | null
  amr: string[]
}

const columns = 'id, user_id, created_at, last_used_at, expires_at, user_agent, address, revoked_at, amr'

function toSession (row: Row): SessionRow {
  return {
    id: row.id,
    userId: row.user_id,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    expiresAt: row.expires_at,
    userAgent: row.user_agent,
    address: row.address,
    revokedAt: row.revoked_at,
    amr: row.amr,
  }
}

/** Why a session ended, kept in `revoked_reason`. */
export type RevokeReason = 'logout' | 'logout_all' | 'revoked_by_user' | 'refresh_token_reused' | 'password_changed' | 'password_reset' | 'email_verified' | 'account_deleted' | 'second_factor_changed'

/**
 * Opens a session and its first refresh token, and remembers the client's device (db/accounts/login-throttle.ts),
 * in one statement (one round trip, atomic on its own). The device is inserted, or renewed when
 * the user already holds it; past `maxDevicesPerUser`, the user's least recently used ones go.
 * The only existing rows it locks are the user's (KEY SHARE) and the device's, so a login and an
 * account deletion queue on the user row, never deadlock.
 */
export async function insertSessionWithToken (
  db: Queryable,
  session: { id: string, userId: string, expiresAt: Date, userAgent: string | null, address: string | null, amr: readonly string[] },
  token: { tokenHash: Buffer, expiresAt: Date },
  device: { tokenHash: Buffer, expiresAt: Date, maxDevicesPerUser: number }
): Promise<void> {
  await db.query(
    `WITH session AS (
       INSERT INTO sessions (id, user_id, expires_at, user_agent, address, amr) VALUES ($1, $2, $3, $4, $5, $11)
       RETURNING id, user_id
     ), token AS (
       INSERT INTO refresh_tokens (token_hash, family_id, user_id, expires_at)
       SELECT $6::bytea, id, user_id, $7::timestamptz FROM session
     ), device AS (
       INSERT INTO devices (token_hash, user_id, expires_at) VALUES ($8, $2, $9)
       ON CONFLICT (token_hash) DO UPDATE SET last_used_at = now(), expires_at = EXCLUDED.expires_at
       WHERE devices.user_id = EXCLUDED.user_id
     )
     DELETE FROM devices WHERE user_id = $2 AND token_hash <> $8 AND token_hash IN (
       SELECT token_hash FROM devices WHERE user_id = $2 AND token_hash <> $8 ORDER BY last_used_at DESC OFFSET $10
     )`,
    [session.id, session.userId, session.expiresAt, session.userAgent, session.address, token.tokenHash, token.expiresAt,
      device.tokenHash, device.expiresAt, Math.max(0, device.maxDevicesPerUser - 1), session.amr])
}

/** Locks the session for a refresh (NO KEY UPDATE: conflicts with a revocation and another refresh, not token inserts). */
export async function lockSessionForRefresh (db: Queryable, id: string): Promise<SessionRow | undefined> {
  const { rows } = await db.query<Row>(`SELECT ${columns} FROM sessions WHERE id = $1 FOR NO KEY UPDATE`, [id])
  return rows[0] === undefined ? undefined : toSession(rows[0])
}

export async function touchSession (db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE sessions SET last_used_at = now() WHERE id = $1', [id])
}

/**
 * Revokes the user's sessions matching `where`, then their refresh tokens; returns the ids. Two
 * statements on purpose: the second's snapshot, taken after the session locks are granted, sees
 * every token a concurrent refresh committed meanwhile.
 */
async function revokeWhere (db: Queryable, userId: string, where: string, params: unknown[], reason: RevokeReason): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH locked AS (
       SELECT id FROM sessions WHERE user_id = $1 AND revoked_at IS NULL AND ${where} ORDER BY id FOR UPDATE
     )
     UPDATE sessions s SET revoked_at = now(), revoked_reason = $2 FROM locked WHERE s.id = locked.id RETURNING s.id`,
    [userId, reason, ...params])
  const ids = rows.map((row) => row.id)
  if (ids.length > 0) {
    await db.query('UPDATE refresh_tokens SET revoked_at = now() WHERE family_id = ANY($1::uuid[]) AND revoked_at IS NULL', [ids])
  }
  return ids
}

/** Revokes one session of this user; false when it is not the user's, unknown, or already revoked. */
export async function revokeSession (db: Queryable, userId: string, sessionId: string, reason: RevokeReason): Promise<boolean> {
  return (await revokeWhere(db, userId, 'id = $3', [sessionId], reason)).length === 1
}

/** The ids revokeAllSessions revoked, for callers that must forget them at once (the session check's cache). */
export async function revokeAllSessionIds (db: Queryable, userId: string, options: { except?: string, reason?: RevokeReason } = {}): Promise<string[]> {
  const reason = options.reason ?? 'logout_all'
  if (options.except === undefined) return await revokeWhere(db, userId, 'true', [], reason)
  return await revokeWhere(db, userId, 'id <> $3', [options.except], reason)
}

/** Revokes every live session of the user but `except`; returns how many. */
export async function revokeAllSessions (db: Queryable, userId: string, options: { except?: string } = {}): Promise<number> {
  return (await revokeAllSessionIds(db, userId, options)).length
}

/** The user's live sessions, newest use first: not revoked, not past their end, with a refresh token that still works. */
export async function listLiveSessions (db: Queryable, userId: string): Promise<SessionRow[]> {
  const { rows } = await db.query<Row>(
    `SELECT ${columns} FROM sessions s
      WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now()
        AND EXISTS (SELECT 1 FROM refresh_tokens t WHERE t.family_id = s.id AND t.revoked_at IS NULL AND t.rotated_at IS NULL AND t.expires_at > now())
      ORDER BY last_used_at DESC, id`,
    [userId])
  return rows.map(toSession)
}

/** Whether the session exists, belongs to the user, is not revoked and has not reached its absolute end. */
export async function isSessionLive (db: Queryable, sessionId: string, userId: string): Promise<boolean> {
  const { rows } = await db.query(
    'SELECT 1 FROM sessions WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL AND expires_at > now()',
    [sessionId, userId])
  return rows.length === 1
}

export interface RefreshTokenRow {
  id: string
  familyId: string
  userId: string
  expiresAt: Date
  rotatedAt: Date | null
  revokedAt: Date | null
  /** The successor, sealed under a key derived from this token (accounts/sign-in/refresh-successor.ts); null until rotated. */
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
