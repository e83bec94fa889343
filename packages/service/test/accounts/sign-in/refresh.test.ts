import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { capturingLogger, registerUser, request, startTestService, type JsonResponse, type TestService } from '../../helpers/service.js'
import { openSuccessor, sealSuccessor } from '../../../src/accounts/sign-in/refresh-successor.js'

describe('refresh token rotation and logout', () => {
  let service: TestService
  const log = capturingLogger('warn')
  before(async () => { service = await startTestService({ logger: log.logger, config: { refreshGraceSeconds: 5 } }) })
  after(async () => { await service.close() })

  const refresh = async (refreshToken: string): Promise<JsonResponse> => await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken } })

  it('trades a refresh token for a new pair, once', async () => {
    const { body: registered } = await registerUser(service)
    const first = await refresh(registered.refreshToken)
    assert.equal(first.status, 200)
    assert.equal(first.body.user.id, registered.user.id)
    assert.notEqual(first.body.refreshToken, registered.refreshToken)
    const me = await request(service, 'GET', '/api/v1/me', { token: first.body.accessToken })
    assert.equal(me.status, 200)
    const second = await refresh(first.body.refreshToken)
    assert.equal(second.status, 200)
  })

  it('stores only a hash of the refresh token', async () => {
    const { body } = await registerUser(service)
    const { rows } = await service.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM refresh_tokens WHERE encode(token_hash, 'escape') LIKE '%' || $1 || '%'", [body.refreshToken])
    assert.equal(rows[0]?.n, 0)
  })

  /** Moves the user's rotations back past the grace window, as if `seconds` had gone by. */
  const age = async (userId: string, seconds: number): Promise<void> => {
    await service.db.pool.query('UPDATE refresh_tokens SET rotated_at = rotated_at - make_interval(secs => $2) WHERE user_id = $1 AND rotated_at IS NOT NULL', [userId, seconds])
  }

  it('revokes the whole session when a rotated token is reused after the grace window, and logs it as a security event', async () => {
    const { body: registered } = await registerUser(service)
    const rotated = await refresh(registered.refreshToken)
    assert.equal(rotated.status, 200)
    await age(registered.user.id as string, 6)
    const replay = await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: registered.refreshToken }, from: '127.0.0.3' })
    assert.equal(replay.status, 401)
    assert.equal(replay.body.error.code, 'AUTH_REFRESH_TOKEN_REUSED')
    // The legitimate holder's newer token is now dead too, and so are the session's access tokens.
    const afterReplay = await refresh(rotated.body.refreshToken)
    assert.equal(afterReplay.status, 401)
    assert.equal(afterReplay.body.error.code, 'AUTH_REFRESH_TOKEN_INVALID')
    const me = await request(service, 'GET', '/api/v1/me', { token: rotated.body.accessToken })
    assert.equal(me.body.error.code, 'AUTH_SESSION_ENDED')
    const sessionId = JSON.parse(Buffer.from(String(rotated.body.accessToken).split('.')[1] ?? '', 'base64url').toString()).sid as string
    const event = log.lines.find((line) => line.event === 'refresh_token_reused' && line.sessionId === sessionId)
    assert.ok(event !== undefined, 'the reuse is logged')
    assert.equal(event.level, 40)
    assert.equal(event.userId, registered.user.id)
    assert.equal(event.address, '127.0.0.3')
    const logged = JSON.stringify(log.lines)
    assert.ok(!logged.includes(registered.refreshToken as string) && !logged.includes(rotated.body.refreshToken as string), 'no token is logged')
  })

  it('gives two concurrent refreshes of one token the same successor, and the session goes on', async () => {
    const { body } = await registerUser(service)
    const results = await Promise.all([refresh(body.refreshToken), refresh(body.refreshToken)])
    assert.deepEqual(results.map((r) => r.status), [200, 200])
    assert.equal(results[0]?.body.refreshToken, results[1]?.body.refreshToken)
    for (const result of results) assert.equal((await request(service, 'GET', '/api/v1/me', { token: result.body.accessToken })).status, 200)
    const next = await refresh(results[0]?.body.refreshToken as string)
    assert.equal(next.status, 200)
    const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM refresh_tokens WHERE user_id = $1', [body.user.id])
    assert.equal(rows[0]?.n, 3, 'one successor per rotation, not one per request')
  })

  it('gives a retry within the grace window the same successor; after the window the retry is reuse', async () => {
    const { body } = await registerUser(service)
    const first = await refresh(body.refreshToken)
    const retry = await refresh(body.refreshToken)
    assert.equal(retry.status, 200)
    assert.equal(retry.body.refreshToken, first.body.refreshToken)
    await age(body.user.id as string, 6)
    const late = await refresh(body.refreshToken)
    assert.equal(late.body.error.code, 'AUTH_REFRESH_TOKEN_REUSED')
  })

  it('keeps the successor sealed: only the rotated token opens it, and the table holds no token', async () => {
    const { body } = await registerUser(service)
    const first = await refresh(body.refreshToken)
    const { rows } = await service.db.pool.query<{ sealed: Buffer }>('SELECT successor_sealed AS sealed FROM refresh_tokens WHERE user_id = $1 AND rotated_at IS NOT NULL', [body.user.id])
    const sealed = rows[0]?.sealed
    assert.ok(sealed !== undefined)
    assert.ok(!sealed.toString('latin1').includes(first.body.refreshToken as string))
    assert.equal(openSuccessor(body.refreshToken as string, sealed), first.body.refreshToken)
    assert.equal(openSuccessor(first.body.refreshToken as string, sealed), undefined)
    assert.equal(openSuccessor('A'.repeat(43), sealSuccessor('B'.repeat(43), 'x')), undefined)
  })

  it('never lets a refresh token outlive its session, and refuses the session past its absolute end', async () => {
    const { body } = await registerUser(service)
    const [session] = (await service.db.pool.query<{ id: string, expires_at: Date, created_at: Date }>('SELECT id, expires_at, created_at FROM sessions WHERE user_id = $1', [body.user.id])).rows
    assert.ok(session !== undefined)
    const lifetimeMs = session.expires_at.getTime() - session.created_at.getTime()
    assert.ok(Math.abs(lifetimeMs - 90 * 24 * 3600 * 1000) < 5000, `the default absolute lifetime: ${lifetimeMs} ms`)
    // Ten seconds left: the next token expires with the session, not 30 days on.
    await service.db.pool.query("UPDATE sessions SET expires_at = now() + interval '10 seconds' WHERE id = $1", [session.id])
    const refreshed = await refresh(body.refreshToken)
    assert.equal(refreshed.status, 200)
    const { rows } = await service.db.pool.query<{ later: number }>(
      'SELECT count(*)::int AS later FROM refresh_tokens t JOIN sessions s ON s.id = t.family_id WHERE s.id = $1 AND t.rotated_at IS NULL AND t.expires_at > s.expires_at', [session.id])
    assert.equal(rows[0]?.later, 0, 'the new token expires with its session')
    await service.db.pool.query("UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = $1", [session.id])
    assert.equal((await refresh(refreshed.body.refreshToken)).body.error.code, 'AUTH_REFRESH_TOKEN_INVALID')
    assert.equal((await request(service, 'GET', '/api/v1/me', { token: refreshed.body.accessToken })).body.error.code, 'AUTH_SESSION_ENDED')
  })

  it('records when the session was last used', async () => {
    const { body } = await registerUser(service)
    await service.db.pool.query("UPDATE sessions SET last_used_at = now() - interval '1 hour' WHERE user_id = $1", [body.user.id])
    await refresh(body.refreshToken)
    const { rows } = await service.db.pool.query<{ recent: boolean }>("SELECT last_used_at > now() - interval '1 minute' AS recent FROM sessions WHERE user_id = $1", [body.user.id])
    assert.equal(rows[0]?.recent, true)
  })

  it('does not touch other families (other logins of the same user)', async () => {
    const { email, password, body: registered } = await registerUser(service)
    const otherLogin = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
    await refresh(registered.refreshToken)
    await age(registered.user.id as string, 6)
    await refresh(registered.refreshToken) // reuse: revokes the first family only
    const other = await refresh(otherLogin.body.refreshToken)
    assert.equal(other.status, 200)
  })

  it('answers 401 for unknown tokens and 400 for malformed ones', async () => {
    const unknown = await refresh('A'.repeat(43))
    assert.equal(unknown.status, 401)
    assert.equal(unknown.body.error.code, 'AUTH_REFRESH_TOKEN_INVALID')
    const malformed = await refresh('not a token!')
    assert.equal(malformed.status, 400)
    assert.equal(malformed.body.error.code, 'VALIDATION_FAILED')
  })

  it('logout answers 204 and ends the session: its refresh and access tokens stop working at once', async () => {
    const { body } = await registerUser(service)
    const rotated = await refresh(body.refreshToken)
    assert.equal((await request(service, 'GET', '/api/v1/me', { token: rotated.body.accessToken })).status, 200)
    const logout = await request(service, 'POST', '/api/v1/auth/logout', { body: { refreshToken: rotated.body.refreshToken } })
    assert.equal(logout.status, 204)
    const afterLogout = await refresh(rotated.body.refreshToken)
    assert.equal(afterLogout.status, 401)
    for (const token of [body.accessToken, rotated.body.accessToken]) {
      const me = await request(service, 'GET', '/api/v1/me', { token })
      assert.deepEqual([me.status, me.body.error.code], [401, 'AUTH_SESSION_ENDED'])
      const post = await request(service, 'POST', '/api/v1/posts', { token, body: { title: 't', body: 'b' } })
      assert.deepEqual([post.status, post.body.error.code], [401, 'AUTH_SESSION_ENDED'])
    }
    const again = await request(service, 'POST', '/api/v1/auth/logout', { body: { refreshToken: rotated.body.refreshToken } })
    assert.equal(again.status, 204)
  })

  it('refuses an expired refresh token', async () => {
    const { body } = await registerUser(service)
    await service.db.pool.query("UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE user_id = $1", [body.user.id])
    const response = await refresh(body.refreshToken)
    assert.equal(response.status, 401)
    assert.equal(response.body.error.code, 'AUTH_REFRESH_TOKEN_INVALID')
  })
})
