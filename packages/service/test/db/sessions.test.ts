/**
 * The sessions table's locking, with two real PostgreSQL connections: a revocation cannot miss
 * a refresh token that a concurrent transaction inserts into the session, and the backfill of
 * 005_sessions.sql gives every existing family a session.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { migrate, readMigrations } from '../../src/db/migrate.js'
import { insertRefreshToken, lockSessionForRefresh, revokeAllSessions } from '../../src/db/accounts/sessions.js'
import { newRefreshToken } from '../../src/accounts/tokens.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { insertSession } from '../helpers/sessions.js'
import { waitFor } from '../helpers/wait.js'

async function newUser (db: pg.Pool | pg.PoolClient): Promise<string> {
  const { rows } = await db.query<{ id: string }>("INSERT INTO users (email, password_hash) VALUES ($1, 'x') RETURNING id", [`${randomUUID()}@example.com`])
  return rows[0]?.id ?? ''
}

async function newSession (db: pg.Pool, userId: string): Promise<string> {
  const id = randomUUID()
  await insertSession(db, { id, userId, expiresAt: new Date(Date.now() + 3_600_000), userAgent: null, address: null })
  await insertRefreshToken(db, { tokenHash: newRefreshToken().tokenHash, familyId: id, userId, expiresAt: new Date(Date.now() + 3_600_000) })
  return id
}

/** Whether the backend `pid` is waiting for a lock now. */
async function waitingOnLock (db: pg.Pool, pid: number): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted', [pid])
  return rows.length > 0
}

describe('session revocation and concurrent refreshes (two connections)', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })

  for (const how of ['a token inserted under the refresh lock', 'a token inserted with no lock but its foreign key'] as const) {
    it(`revokes ${how} by a transaction still open when the revocation starts`, async () => {
      const userId = await newUser(db.pool)
      const sessionId = await newSession(db.pool, userId)
      const refreshing = await db.pool.connect()
      const revoking = await db.pool.connect()
      try {
        await refreshing.query('BEGIN')
        if (how === 'a token inserted under the refresh lock') assert.ok(await lockSessionForRefresh(refreshing, sessionId) !== undefined)
        await insertRefreshToken(refreshing, { tokenHash: newRefreshToken().tokenHash, familyId: sessionId, userId, expiresAt: new Date(Date.now() + 3_600_000) })
        const revokingPid = (await revoking.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0
        await revoking.query('BEGIN')
        const revocation = revokeAllSessions(revoking, userId).then(async (count) => { await revoking.query('COMMIT'); return count })
        // The revocation waits on the session row the open transaction holds...
        await waitFor('the revocation to wait for the session lock', async () => await waitingOnLock(db.pool, revokingPid))
        await refreshing.query('COMMIT')
        // ...so once it is released, its token UPDATE sees the token committed meanwhile.
        assert.equal(await revocation, 1)
        const { rows } = await db.pool.query<{ live: number }>('SELECT count(*)::int AS live FROM refresh_tokens WHERE family_id = $1 AND revoked_at IS NULL', [sessionId])
        assert.equal(rows[0]?.live, 0, 'no token escapes the revocation')
      } finally {
        refreshing.release()
        revoking.release()
      }
    })
  }

  it('revokes every session but the one kept, and counts them', async () => {
    const userId = await newUser(db.pool)
    const [a, b, c] = [await newSession(db.pool, userId), await newSession(db.pool, userId), await newSession(db.pool, userId)]
    const otherUser = await newUser(db.pool)
    const other = await newSession(db.pool, otherUser)
    assert.equal(await revokeAllSessions(db.pool, userId, { except: b }), 2)
    const { rows } = await db.pool.query<{ id: string, revoked: boolean }>('SELECT id, revoked_at IS NOT NULL AS revoked FROM sessions WHERE id = ANY($1::uuid[])', [[a, b, c, other]])
    assert.deepEqual(Object.fromEntries(rows.map((row) => [row.id, row.revoked])), { [a]: true, [b]: false, [c]: true, [other]: false })
    assert.equal(await revokeAllSessions(db.pool, userId, { except: b }), 0, 'already revoked ones are not counted again')
  })
})

describe('005_sessions.sql on a database with refresh tokens', () => {
  it('gives every existing family a session; a family whose tokens are all revoked is a revoked session', async () => {
    const db = await createTestDatabase({ migrate: false })
    try {
      await migrate(db.pool, readMigrations().filter((migration) => migration.version < 5))
      const userId = await newUser(db.pool)
      const live = randomUUID()
      const revoked = randomUUID()
      for (const [family, revokedAt] of [[live, null], [live, null], [revoked, new Date()]] as const) {
        await db.pool.query("INSERT INTO refresh_tokens (token_hash, family_id, user_id, expires_at, revoked_at) VALUES ($1, $2, $3, now() + interval '1 day', $4)",
          [newRefreshToken().tokenHash, family, userId, revokedAt])
      }
      await migrate(db.pool)
      const { rows } = await db.pool.query<{ id: string, user_id: string, revoked: boolean, later: boolean }>(
        'SELECT s.id, s.user_id, s.revoked_at IS NOT NULL AS revoked, EXISTS (SELECT 1 FROM refresh_tokens t WHERE t.family_id = s.id AND t.expires_at > s.expires_at) AS later FROM sessions s ORDER BY s.revoked_at NULLS FIRST')
      assert.deepEqual(rows, [{ id: live, user_id: userId, revoked: false, later: false }, { id: revoked, user_id: userId, revoked: true, later: false }])
    } finally {
      await db.drop()
    }
  })
})
