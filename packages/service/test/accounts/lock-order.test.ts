/**
 * The lock order of the account lifecycle (users, then sessions, then refresh and account
 * tokens), on a real service and database: a second PostgreSQL client holds a row lock so two
 * requests queue in the interleaving that deadlocked (40P01, answered 500) before the order
 * was one; then it lets go and both must answer cleanly and leave a consistent state.
 * And a password change spends the reset links mailed before it.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { insertAccountToken, type AccountTokenPurpose } from '../../src/db/accounts/account-tokens.js'
import { newAccountToken } from '../../src/accounts/account-mail-service.js'
import { registerUser, request, startTestService, type JsonResponse, type TestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

describe('lock order of the account lifecycle', () => {
  let service: TestService
  /** The second client: holds a row lock to force the interleaving. */
  let holder: pg.Client

  before(async () => {
    service = await startTestService()
    holder = new pg.Client({ connectionString: service.db.url })
    await holder.connect()
  })
  after(async () => {
    await holder?.end()
    await service?.close()
  })

  /** Backends of this database waiting on a lock (the holder's victims). */
  const waitingOnLocks = async (): Promise<number> => {
    const { rows } = await service.db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
    return rows[0]?.n ?? 0
  }

  /** Starts the requests one by one, each once the ones before wait on a lock, while `lockSql` is held; then lets go. */
  const interleave = async (lockSql: string, params: unknown[], requests: Array<() => Promise<JsonResponse>>): Promise<JsonResponse[]> => {
    await holder.query('BEGIN')
    const started: Array<Promise<JsonResponse>> = []
    try {
      const locked = await holder.query(lockSql, params)
      assert.equal(locked.rowCount, 1, 'the holder locked its row')
      for (const [index, send] of requests.entries()) {
        started.push(send())
        await waitFor(`${index + 1} request(s) waiting on a lock`, async () => await waitingOnLocks() >= index + 1)
      }
    } finally {
      await holder.query('COMMIT')
    }
    return await Promise.all(started)
  }

  const issueToken = async (userId: string, purpose: AccountTokenPurpose): Promise<string> => {
    const token = newAccountToken()
    await insertAccountToken(service.db.pool, { tokenHash: token.tokenHash, purpose, userId, ttlSeconds: 3600 })
    return token.token
  }

  const rowsOf = async (userId: string): Promise<Record<string, number>> => {
    const counts: Record<string, number> = {}
    for (const [table, column] of [['users', 'id'], ['sessions', 'user_id'], ['refresh_tokens', 'user_id'], ['account_tokens', 'user_id']] as const) {
      const { rows } = await service.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`, [userId])
      counts[table] = rows[0]?.n ?? -1
    }
    return counts
  }
  const nothingLeft = { users: 0, sessions: 0, refresh_tokens: 0, account_tokens: 0 }

  it('a refresh and DELETE /me at once: no deadlock, the account is gone with every session and token', async () => {
    const { password, body } = await registerUser(service)
    const userId = body.user.id as string
    const tokenHash = createHash('sha256').update(body.refreshToken as string).digest()
    // The refresh waits on its token's row (after the session, before its insert); DELETE /me then comes in.
    const [refreshed, deleted] = await interleave('SELECT 1 FROM refresh_tokens WHERE token_hash = $1 FOR UPDATE', [tokenHash], [
      async () => await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: body.refreshToken } }),
      async () => await request(service, 'DELETE', '/api/v1/me', { token: body.accessToken as string, body: { password } }),
    ])
    assert.equal(refreshed?.status, 200, JSON.stringify(refreshed?.body))
    assert.equal(deleted?.status, 204, JSON.stringify(deleted?.body))
    assert.deepEqual(await rowsOf(userId), nothingLeft)
    const late = await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: refreshed?.body.refreshToken } })
    assert.equal(late.status, 401, 'the refresh\'s new token went with the account')
  })

  it('refreshes and DELETE /me racing freely, 20 rounds: never a 500, nothing left', async () => {
    for (let round = 0; round < 20; round++) {
      const { password, body } = await registerUser(service)
      const [refreshed, deleted] = await Promise.all([
        request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: body.refreshToken } }),
        request(service, 'DELETE', '/api/v1/me', { token: body.accessToken as string, body: { password } }),
      ])
      assert.ok([200, 401].includes(refreshed.status), `round ${round}: refresh ${refreshed.status} ${JSON.stringify(refreshed.body)}`)
      assert.equal(deleted.status, 204, `round ${round}: ${JSON.stringify(deleted.body)}`)
      assert.deepEqual(await rowsOf(body.user.id as string), nothingLeft, `round ${round}`)
    }
  })

  it('two reset links of one account used at once: one wins, the other is refused, both are spent', async () => {
    const { email, body } = await registerUser(service)
    const userId = body.user.id as string
    const [first, second] = [await issueToken(userId, 'password_reset'), await issueToken(userId, 'password_reset')]
    const reset = (token: string, password: string) => async () => await request(service, 'POST', '/api/v1/auth/password/reset', { body: { token, password } })
    const [byFirst, bySecond] = await interleave('SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE', [userId], [
      reset(first, 'the first new password'),
      reset(second, 'the second new password'),
    ])
    assert.deepEqual([byFirst?.status, bySecond?.status], [204, 401], JSON.stringify([byFirst?.body, bySecond?.body]))
    assert.equal(bySecond?.body.error.code, 'ACCOUNT_TOKEN_INVALID')
    const { rows } = await service.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM account_tokens WHERE user_id = $1 AND purpose = 'password_reset' AND used_at IS NULL", [userId])
    assert.equal(rows[0]?.n, 0, 'both links spent')
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: 'the first new password' } })).status, 200)
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: 'the second new password' } })).status, 401)
  })

  for (const [purpose, path, extra] of [['password_reset', '/api/v1/auth/password/reset', { password: 'a password nobody sets' }], ['verify_email', '/api/v1/auth/verify-email', {}]] as const) {
    it(`${path} and DELETE /me at once: no deadlock, the link is refused and the account is gone`, async () => {
      const { password, body } = await registerUser(service)
      const userId = body.user.id as string
      const token = await issueToken(userId, purpose)
      // DELETE /me queues on the user row first, the link's use behind it.
      const [deleted, used] = await interleave('SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE', [userId], [
        async () => await request(service, 'DELETE', '/api/v1/me', { token: body.accessToken as string, body: { password } }),
        async () => await request(service, 'POST', path, { body: { token, ...extra } }),
      ])
      assert.equal(deleted?.status, 204, JSON.stringify(deleted?.body))
      assert.deepEqual([used?.status, used?.body.error.code], [401, 'ACCOUNT_TOKEN_INVALID'])
      assert.deepEqual(await rowsOf(userId), nothingLeft)
    })
  }

  it('a password change spends the reset links issued before it', async () => {
    const { email, password, body } = await registerUser(service)
    const token = await issueToken(body.user.id as string, 'password_reset')
    const changed = await request(service, 'POST', '/api/v1/me/password', { token: body.accessToken as string, body: { currentPassword: password, newPassword: 'a changed passphrase' } })
    assert.equal(changed.status, 204)
    const reset = await request(service, 'POST', '/api/v1/auth/password/reset', { body: { token, password: 'the thief\'s password' } })
    assert.deepEqual([reset.status, reset.body.error.code], [401, 'ACCOUNT_TOKEN_INVALID'])
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: 'a changed passphrase' } })).status, 200)
  })
})
