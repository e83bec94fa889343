import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerUser, request, startTestService, type JsonResponse, type TestService } from '../helpers/service.js'

describe('refresh token rotation and logout', () => {
  let service: TestService
  before(async () => { service = await startTestService() })
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

  it('revokes the whole family when a rotated token is reused', async () => {
    const { body: registered } = await registerUser(service)
    const rotated = await refresh(registered.refreshToken)
    assert.equal(rotated.status, 200)
    const replay = await refresh(registered.refreshToken)
    assert.equal(replay.status, 401)
    assert.equal(replay.body.error.code, 'AUTH_REFRESH_TOKEN_REUSED')
    // The legitimate holder's newer token is now dead too.
    const afterReplay = await refresh(rotated.body.refreshToken)
    assert.equal(afterReplay.status, 401)
    assert.equal(afterReplay.body.error.code, 'AUTH_REFRESH_TOKEN_INVALID')
  })

  it('lets only one of two concurrent refreshes of one token win', async () => {
    const { body } = await registerUser(service)
    const results = await Promise.all([refresh(body.refreshToken), refresh(body.refreshToken)])
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 401])
  })

  it('does not touch other families (other logins of the same user)', async () => {
    const { email, password, body: registered } = await registerUser(service)
    const otherLogin = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
    await refresh(registered.refreshToken)
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

  it('logout answers 204 and revokes the family', async () => {
    const { body } = await registerUser(service)
    const rotated = await refresh(body.refreshToken)
    const logout = await request(service, 'POST', '/api/v1/auth/logout', { body: { refreshToken: rotated.body.refreshToken } })
    assert.equal(logout.status, 204)
    const afterLogout = await refresh(rotated.body.refreshToken)
    assert.equal(afterLogout.status, 401)
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
