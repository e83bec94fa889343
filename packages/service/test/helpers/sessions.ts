/**
 * A bare sessions row, without the refresh token the service always opens it with
 * (insertSessionWithToken, src/db/accounts/sessions.ts): the states the session and purge tests build by hand.
 */
import type { Queryable } from '../../src/db/pool.js'

export async function insertSession (db: Queryable, session: { id: string, userId: string, expiresAt: Date, userAgent: string | null, address: string | null }): Promise<void> {
  await db.query(
    'INSERT INTO sessions (id, user_id, expires_at, user_agent, address) VALUES ($1, $2, $3, $4, $5)',
    [session.id, session.userId, session.expiresAt, session.userAgent, session.address])
}
