/**
 * The signed-in user's sessions and account: GET/DELETE /me/sessions, logout-all, password
 * change and account deletion, on one real service; and the session check's cache.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { deleteAccount } from '../../src/db/accounts/accounts.js'
import { registerUser, request, startTestService, uniqueEmail, type TestService } from '../helpers/service.js'

interface Signed { accessToken: string, refreshToken: string }

describe('sessions and account routes', () => {
  let service: TestService
  // A long base delay: a throttled check stays throttled however slow the machine.
  before(async () => { service = await startTestService({ config: { loginThrottleAccountFailures: 3, loginThrottleDeviceFailures: 3, loginThrottleBaseDelaySeconds: 60 } }) })
  after(async () => { await service.close() })

  const login = async (email: string, password: string, headers: Record<string, string> = {}, from?: string): Promise<Signed> => {
    const response = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password }, headers, ...(from === undefined ? {} : { from }) })
    assert.equal(response.status, 200)
    return response.body as Signed
  }
  const me = async (token: string): Promise<[number, string | undefined]> => {
    const response = await request(service, 'GET', '/api/v1/me', { token })
    return [response.status, response.body?.error?.code]
  }
  const refresh = async (refreshToken: string): Promise<number> => (await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken } })).status

  it('lists each live session with its user agent and address, the current one marked', async () => {
    const { email, password, body: registered } = await registerUser(service)
    const phone = await login(email, password, { 'user-agent': 'Phone/1.0' }, '127.0.0.4')
    const ended = await login(email, password)
    await request(service, 'POST', '/api/v1/auth/logout', { body: { refreshToken: ended.refreshToken } })
    const response = await request(service, 'GET', '/api/v1/me/sessions', { token: phone.accessToken })
    assert.equal(response.status, 200)
    const items = response.body.items as Array<Record<string, unknown>>
    assert.equal(items.length, 2, 'the registration and the phone; not the ended one')
    const current = items.find((item) => item.current === true)
    assert.deepEqual({ ...current, id: undefined, createdAt: undefined, lastUsedAt: undefined }, { id: undefined, createdAt: undefined, lastUsedAt: undefined, userAgent: 'Phone/1.0', address: '127.0.0.4', current: true })
    assert.equal(items.filter((item) => item.current === false).length, 1)
    const other = await request(service, 'GET', '/api/v1/me/sessions', { token: registered.accessToken as string })
    assert.deepEqual(other.body.items.map((item: { id: string }) => item.id).sort(), items.map((item) => item.id).sort())
  })

  it('ends one session: its tokens stop working, the others keep going; 404 for an unknown or another user\'s id', async () => {
    const { email, password } = await registerUser(service)
    const keep = await login(email, password)
    const end = await login(email, password)
    const { items } = (await request(service, 'GET', '/api/v1/me/sessions', { token: end.accessToken })).body as { items: Array<{ id: string, current: boolean }> }
    const endId = items.find((item) => item.current)?.id ?? ''
    const stranger = await registerUser(service)
    const byStranger = await request(service, 'DELETE', `/api/v1/me/sessions/${endId}`, { token: stranger.body.accessToken as string })
    assert.deepEqual([byStranger.status, byStranger.body.error.code], [404, 'SESSION_NOT_FOUND'])
    const unknown = await request(service, 'DELETE', `/api/v1/me/sessions/${randomUUID()}`, { token: keep.accessToken })
    assert.deepEqual([unknown.status, unknown.body.error.code], [404, 'SESSION_NOT_FOUND'])
    assert.equal((await request(service, 'DELETE', '/api/v1/me/sessions/not-a-uuid', { token: keep.accessToken })).status, 400)
    assert.deepEqual(await me(end.accessToken), [200, undefined], 'untouched by the refusals')

    const ended = await request(service, 'DELETE', `/api/v1/me/sessions/${endId}`, { token: keep.accessToken })
    assert.equal(ended.status, 204)
    assert.deepEqual(await me(end.accessToken), [401, 'AUTH_SESSION_ENDED'])
    assert.equal(await refresh(end.refreshToken), 401)
    assert.deepEqual(await me(keep.accessToken), [200, undefined])
    assert.equal(await refresh(keep.refreshToken), 200)
    assert.equal((await request(service, 'DELETE', `/api/v1/me/sessions/${endId}`, { token: keep.accessToken })).status, 404, 'an ended session is not found again')
  })

  it('logout-all ends every session of the user, the caller\'s included, and no other user\'s', async () => {
    const { email, password, body: registered } = await registerUser(service)
    const second = await login(email, password)
    const stranger = await registerUser(service)
    assert.equal((await request(service, 'POST', '/api/v1/auth/logout-all')).status, 401)
    const response = await request(service, 'POST', '/api/v1/auth/logout-all', { token: second.accessToken })
    assert.equal(response.status, 204)
    for (const signed of [registered as Signed, second]) {
      assert.deepEqual(await me(signed.accessToken), [401, 'AUTH_SESSION_ENDED'])
      assert.equal(await refresh(signed.refreshToken), 401)
    }
    assert.deepEqual(await me(stranger.body.accessToken as string), [200, undefined])
  })

  /** The failures counted for the session of `accessToken` (its `sid` claim). */
  const sessionFailures = async (accessToken: string): Promise<number[]> => {
    const { sid } = JSON.parse(Buffer.from(accessToken.split('.')[1] ?? '', 'base64url').toString()) as { sid: string }
    const { rows } = await service.db.pool.query<{ failures: number }>("SELECT failures FROM login_failures WHERE scope = 'device' AND key = $1", [`session:${sid}`])
    return rows.map((row) => row.failures)
  }

  it('changes the password: the current session keeps working, every other ends; a wrong current password is 403 and a failed login', async () => {
    const { email, password } = await registerUser(service)
    const current = await login(email, password)
    const other = await login(email, password)
    const wrong = await request(service, 'POST', '/api/v1/me/password', { token: current.accessToken, body: { currentPassword: 'not the password', newPassword: 'a brand new passphrase' } })
    assert.deepEqual([wrong.status, wrong.body.error.code], [403, 'CURRENT_PASSWORD_INCORRECT'])
    assert.deepEqual(await sessionFailures(current.accessToken), [1], 'counted as a failed check of the signed-in session, a known client')
    assert.deepEqual(await me(other.accessToken), [200, undefined], 'a refused change ends nothing')

    const changed = await request(service, 'POST', '/api/v1/me/password', { token: current.accessToken, body: { currentPassword: password, newPassword: 'a brand new passphrase' } })
    assert.equal(changed.status, 204)
    assert.deepEqual(await me(current.accessToken), [200, undefined])
    assert.equal(await refresh(current.refreshToken), 200)
    assert.deepEqual(await me(other.accessToken), [401, 'AUTH_SESSION_ENDED'])
    assert.equal(await refresh(other.refreshToken), 401)
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).status, 401, 'the old password no longer signs in')
    await login(email, 'a brand new passphrase')
  })

  it('throttles password checks with login\'s rules, by the session\'s own failures: past the bound, 429 whatever the password; the owner still signs in', async () => {
    const { email, password, body } = await registerUser(service)
    for (let i = 0; i < 3; i++) {
      const wrong = await request(service, 'DELETE', '/api/v1/me', { token: body.accessToken as string, body: { password: `wrong ${i}` } })
      assert.equal(wrong.status, 403)
    }
    const throttled = await request(service, 'DELETE', '/api/v1/me', { token: body.accessToken as string, body: { password } })
    assert.deepEqual([throttled.status, throttled.body.error.code], [429, 'TOO_MANY_ATTEMPTS'])
    assert.ok(Number(throttled.headers.get('retry-after')) >= 1)
    // A stolen access token's guesses are the session's own: they cannot lock the owner out.
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).status, 200, 'the account is not throttled by them')
    assert.deepEqual(await me(body.accessToken as string), [200, undefined], 'the account is still there')
  })

  it('counts password checks sent at once: of 12 wrong ones at the same moment, 3 are checked and 9 get 429', async () => {
    const { body } = await registerUser(service)
    const answers = await Promise.all(Array.from({ length: 12 }, async (_, i) => await request(service, 'DELETE', '/api/v1/me', { token: body.accessToken as string, body: { password: `burst ${i}` } })))
    const statuses = answers.map((answer) => answer.status).sort()
    assert.deepEqual(statuses, [...Array(3).fill(403), ...Array(9).fill(429)], statuses.join(' '))
    assert.deepEqual(await me(body.accessToken as string), [200, undefined], 'the account is still there')
  })

  it('deletes the account with everything of it in one go, after checking the password', async () => {
    const { email, password, body } = await registerUser(service)
    const other = await login(email, password)
    const post = await request(service, 'POST', '/api/v1/posts', { token: body.accessToken as string, body: { title: 'mine', body: 'soon gone' } })
    assert.equal(post.status, 201)
    // Rows keyed by the email: a reset request (its count; its mail) and a mail waiting for a retry, which would go out after the account is gone.
    assert.equal((await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email } })).status, 202)
    const bystander = uniqueEmail('bystander')
    for (const recipient of [email, bystander]) {
      await service.db.pool.query("INSERT INTO mail_outbox (kind, recipient, subject, body_text, next_attempt_at) VALUES ('test', $1, 'a retry', 'later', now() + interval '1 hour')", [recipient])
    }
    const wrong = await request(service, 'DELETE', '/api/v1/me', { token: body.accessToken as string, body: { password: 'not it' } })
    assert.deepEqual([wrong.status, wrong.body.error.code], [403, 'CURRENT_PASSWORD_INCORRECT'])
    assert.equal((await request(service, 'DELETE', '/api/v1/me', { body: { password } })).status, 401)

    const deleted = await request(service, 'DELETE', '/api/v1/me', { token: body.accessToken as string, body: { password } })
    assert.equal(deleted.status, 204)
    const userId = body.user.id as string
    for (const [table, column] of [['users', 'id'], ['sessions', 'user_id'], ['refresh_tokens', 'user_id'], ['posts', 'author_id']] as const) {
      const { rows } = await service.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`, [userId])
      assert.equal(rows[0]?.n, 0, `no ${table} row is left`)
    }
    for (const [table, where] of [['mail_outbox', "recipient = $1 AND status = 'pending'"], ['mail_requests', "scope = 'account' AND key = $1"], ['login_failures', "scope = 'account' AND key = $1"]] as const) {
      const { rows } = await service.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, [email])
      assert.equal(rows[0]?.n, 0, `no ${table} row of the email is left`)
    }
    const { rows: others } = await service.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM mail_outbox WHERE recipient = $1 AND status = 'pending'", [bystander])
    assert.equal(others[0]?.n, 1, 'another address\'s mail stays')
    for (const token of [body.accessToken as string, other.accessToken]) assert.deepEqual(await me(token), [401, 'AUTH_SESSION_ENDED'])
    assert.equal(await refresh(other.refreshToken), 401)
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).status, 401)
  })

  it('account deletion forgets the email\'s login failures too (one may land after the password check)', async () => {
    const { email, body } = await registerUser(service)
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: 'not the password' } })).status, 401)
    const count = async (): Promise<number | undefined> => (await service.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM login_failures WHERE scope = 'account' AND key = $1", [email])).rows[0]?.n
    assert.equal(await count(), 1)
    assert.equal((await deleteAccount(service.db.pool, body.user.id as string)).deleted, true)
    assert.equal(await count(), 0)
  })

  it('documents every new route and its statuses', async () => {
    const { body } = await request(service, 'GET', '/openapi.json')
    const statuses = (path: string, method: string): string[] => Object.keys(body.paths[path]?.[method]?.responses ?? {}).sort()
    assert.deepEqual(statuses('/api/v1/me/sessions', 'get'), ['200', '401', '503'])
    assert.deepEqual(statuses('/api/v1/me/sessions/{id}', 'delete'), ['204', '400', '401', '404', '413', '415', '503'])
    assert.deepEqual(statuses('/api/v1/auth/logout-all', 'post'), ['204', '400', '401', '413', '415', '503'])
    assert.deepEqual(statuses('/api/v1/me', 'delete'), ['204', '400', '401', '403', '413', '415', '429', '503'])
    assert.deepEqual(statuses('/api/v1/me/password', 'post'), ['204', '400', '401', '403', '413', '415', '429', '503'])
  })
})

describe('the session check\'s cache', () => {
  it('remembers a live session for its time, but a revocation through this process counts at once', async () => {
    const service = await startTestService({ config: { sessionCheckCacheMs: 60_000 } })
    try {
      const { body } = await registerUser(service)
      const token = body.accessToken as string
      assert.equal((await request(service, 'GET', '/api/v1/me', { token })).status, 200)
      // Revoked behind the process's back (another replica): the cached answer stands for its time.
      await service.db.pool.query('UPDATE sessions SET revoked_at = now() WHERE user_id = $1', [body.user.id])
      assert.equal((await request(service, 'GET', '/api/v1/me', { token })).status, 200)
      await service.db.pool.query('UPDATE sessions SET revoked_at = NULL WHERE user_id = $1', [body.user.id])
      // Through this process: refused at once, cache or not.
      assert.equal((await request(service, 'POST', '/api/v1/auth/logout', { body: { refreshToken: body.refreshToken } })).status, 204)
      const after = await request(service, 'GET', '/api/v1/me', { token })
      assert.deepEqual([after.status, after.body.error.code], [401, 'AUTH_SESSION_ENDED'])
    } finally {
      await service.close()
    }
  })

  it('with no cache, a revocation through another replica counts at the next request', async () => {
    const service = await startTestService({ config: { sessionCheckCacheMs: 0 } })
    try {
      const { body } = await registerUser(service)
      const token = body.accessToken as string
      assert.equal((await request(service, 'GET', '/api/v1/me', { token })).status, 200)
      await service.db.pool.query('UPDATE sessions SET revoked_at = now() WHERE user_id = $1', [body.user.id])
      assert.equal((await request(service, 'GET', '/api/v1/me', { token })).status, 401)
    } finally {
      await service.close()
    }
  })
})
