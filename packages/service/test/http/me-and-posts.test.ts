import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createSigner } from 'fast-jwt'
import { registerUser, request, startTestService, testJwtSecret, type TestService } from '../helpers/service.js'

describe('GET /me and posts', () => {
  let service: TestService
  let token: string
  let userId: string
  before(async () => {
    // HS256: the tests below forge tokens with the shared secret (EdDSA tokens: access-tokens.test.ts).
    service = await startTestService({ config: { jwtAlgorithm: 'HS256' } })
    const { body } = await registerUser(service, { name: 'Writer' })
    token = body.accessToken
    userId = body.user.id
  })
  after(async () => { await service.close() })

  it('GET /me returns the user for a valid token', async () => {
    const response = await request(service, 'GET', '/api/v1/me', { token })
    assert.equal(response.status, 200)
    assert.equal(response.body.id, userId)
    assert.equal(response.body.name, 'Writer')
    assert.equal(response.body.passwordHash, undefined)
    assert.equal(response.body.password_hash, undefined)
  })

  it('GET /me answers 401 without, with a bad, with an expired or with a foreign token', async () => {
    const none = await request(service, 'GET', '/api/v1/me')
    assert.equal(none.status, 401)
    assert.equal(none.body.error.code, 'AUTH_TOKEN_MISSING')
    const garbage = await request(service, 'GET', '/api/v1/me', { token: 'abc.def.ghi' })
    assert.equal(garbage.body.error.code, 'AUTH_TOKEN_INVALID')
    const expired = createSigner({ key: testJwtSecret, iss: 'tollbooth', expiresIn: 1, clockTimestamp: Date.now() - 60_000 })({ sub: userId })
    assert.equal((await request(service, 'GET', '/api/v1/me', { token: expired })).body.error.code, 'AUTH_TOKEN_INVALID')
    const foreign = createSigner({ key: 'another-secret-of-at-least-32-characters!', iss: 'tollbooth', expiresIn: 60_000 })({ sub: userId })
    assert.equal((await request(service, 'GET', '/api/v1/me', { token: foreign })).status, 401)
    const basic = await request(service, 'GET', '/api/v1/me', { headers: { authorization: 'Basic dXNlcjpwYXNz' } })
    assert.equal(basic.status, 401)
  })

  it('accepts the Bearer scheme in any case', async () => {
    for (const scheme of ['bearer', 'BEARER', 'bEaReR']) {
      const response = await request(service, 'GET', '/api/v1/me', { headers: { authorization: `${scheme} ${token}` } })
      assert.equal(response.status, 200, scheme)
      assert.equal(response.body.id, userId)
    }
  })

  it('answers 401 AUTH_TOKEN_INVALID for a validly signed token whose subject is not a user id', async () => {
    for (const sub of ['not-a-uuid', '1', `${userId}x`, "' OR 1=1 --"]) {
      const forged = createSigner({ key: testJwtSecret, iss: 'tollbooth', expiresIn: 60_000 })({ sub })
      const me = await request(service, 'GET', '/api/v1/me', { token: forged })
      assert.equal(me.status, 401, sub)
      assert.equal(me.body.error.code, 'AUTH_TOKEN_INVALID')
      const post = await request(service, 'POST', '/api/v1/posts', { token: forged, body: { title: 't', body: 'b' } })
      assert.equal(post.status, 401, sub)
      assert.equal(post.body.error.code, 'AUTH_TOKEN_INVALID')
    }
  })

  it('POST /posts creates a post for the signed-in user', async () => {
    const response = await request(service, 'POST', '/api/v1/posts', { token, body: { title: 'Hello', body: 'First post' } })
    assert.equal(response.status, 201)
    assert.equal(response.body.authorId, userId)
    assert.equal(response.body.title, 'Hello')
    assert.equal(typeof response.body.id, 'number')
  })

  it('POST /posts needs a token and a valid body, and writes nothing otherwise', async () => {
    const count = async (): Promise<number> => (await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM posts')).rows[0]?.n ?? -1
    const before = await count()
    assert.equal((await request(service, 'POST', '/api/v1/posts', { body: { title: 'x', body: 'y' } })).status, 401)
    const invalid: Array<[unknown, string]> = [
      [{ title: '', body: 'y' }, 'title'],
      [{ title: 'x' }, 'body'],
      [{ title: 'x', body: 'y', authorId: userId }, 'authorId'],
      [{ title: 'x'.repeat(201), body: 'y' }, 'title'],
      [{ title: 1, body: 'y' }, 'title'],
      [{ title: '   ', body: 'y' }, 'title'],
      [{ title: 'x', body: '\n\t ' }, 'body'],
      [{ title: 'a\u0000b', body: 'y' }, 'title'],
      [{ title: 'x', body: 'text\u0000' }, 'body'],
    ]
    for (const [body, field] of invalid) {
      const response = await request(service, 'POST', '/api/v1/posts', { token, body })
      assert.equal(response.status, 400, JSON.stringify(body))
      assert.equal(response.body.error.code, 'VALIDATION_FAILED')
      assert.equal(response.body.error.field, field, JSON.stringify(body))
    }
    assert.equal(await count(), before)
  })

  it('POST /posts authenticates before it parses or validates the body', async () => {
    const anonymous: Array<{ body: unknown, headers?: Record<string, string> }> = [
      { body: { title: '', body: 'y' } },
      { body: { unknown: true } },
      { body: '{"title": ' },
      { body: 'title=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    ]
    for (const { body, headers } of anonymous) {
      const none = await request(service, 'POST', '/api/v1/posts', { body, ...(headers === undefined ? {} : { headers }) })
      assert.equal(none.status, 401, JSON.stringify(body))
      assert.equal(none.body.error.code, 'AUTH_TOKEN_MISSING')
      const bad = await request(service, 'POST', '/api/v1/posts', { body, token: 'abc.def.ghi', ...(headers === undefined ? {} : { headers }) })
      assert.equal(bad.status, 401, JSON.stringify(body))
      assert.equal(bad.body.error.code, 'AUTH_TOKEN_INVALID')
    }
  })

  it('GET /posts pages newest first with a cursor, without gaps or repeats', async () => {
    for (let i = 0; i < 7; i++) {
      await request(service, 'POST', '/api/v1/posts', { token, body: { title: `post ${i}`, body: 'body' } })
    }
    const seen: number[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const query: string = cursor === null ? '?limit=3' : `?limit=3&cursor=${cursor}`
      const page = await request(service, 'GET', `/api/v1/posts${query}`)
      assert.equal(page.status, 200)
      assert.ok(page.body.items.length <= 3)
      seen.push(...page.body.items.map((post: { id: number }) => post.id))
      cursor = page.body.nextCursor
      pages += 1
    } while (cursor !== null && pages < 20)
    const total = (await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM posts')).rows[0]?.n
    assert.equal(seen.length, total)
    assert.deepEqual(seen, [...seen].sort((a, b) => b - a))
    assert.equal(new Set(seen).size, seen.length)
  })

  it('GET /posts rejects a bad limit or cursor with 400', async () => {
    for (const query of ['?limit=0', '?limit=101', '?limit=abc', '?cursor=bogus', '?unknown=1']) {
      const response = await request(service, 'GET', `/api/v1/posts${query}`)
      assert.equal(response.status, 400, query)
      assert.equal(response.body.error.code, 'VALIDATION_FAILED')
    }
  })
})
