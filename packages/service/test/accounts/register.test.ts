import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerUser, request, startTestService, uniqueEmail, type TestService } from '../helpers/service.js'

describe('POST /api/v1/auth/register', () => {
  let service: TestService
  before(async () => { service = await startTestService() })
  after(async () => { await service.close() })

  async function userCount (): Promise<number> {
    const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM users')
    return rows[0]?.n ?? -1
  }
  async function tokenCount (): Promise<number> {
    const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM refresh_tokens')
    return rows[0]?.n ?? -1
  }

  it('creates the account and returns the user with a token pair', async () => {
    const email = uniqueEmail('New.Person')
    const response = await request(service, 'POST', '/api/v1/auth/register', { body: { email, password: 'a long enough password', name: 'Ada' } })
    assert.equal(response.status, 201)
    assert.equal(response.body.user.email, email.toLowerCase())
    assert.equal(response.body.user.name, 'Ada')
    assert.match(response.body.user.id, /^[0-9a-f-]{36}$/)
    assert.equal(typeof response.body.accessToken, 'string')
    assert.equal(response.body.accessToken.split('.').length, 3)
    assert.match(response.body.refreshToken, /^[A-Za-z0-9_-]{40,}$/)
    assert.equal(response.body.expiresIn, service.config.accessTokenTtlSeconds)
    const { rows } = await service.db.pool.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE email = $1', [email.toLowerCase()])
    assert.match(rows[0]?.password_hash ?? '', /^\$argon2id\$v=19\$m=1024,t=1,p=1\$/)
    assert.ok(!(rows[0]?.password_hash ?? '').includes('a long enough password'))
  })

  it('answers 409 EMAIL_TAKEN for the same email in another case or with spaces, and writes nothing', async () => {
    const { email } = await registerUser(service)
    const users = await userCount()
    const tokens = await tokenCount()
    for (const variant of [email.toUpperCase(), email.replace(/^./, (c) => c.toUpperCase()), `  ${email} `, `\t${email.toUpperCase()}\n`]) {
      const response = await request(service, 'POST', '/api/v1/auth/register', { body: { email: variant, password: 'another password 123' } })
      assert.equal(response.status, 409)
      assert.equal(response.body.error.code, 'EMAIL_TAKEN')
    }
    assert.equal(await userCount(), users)
    assert.equal(await tokenCount(), tokens)
  })

  const invalidBodies: Array<[string, unknown, string | undefined]> = [
    ['missing email', { password: 'password123' }, 'email'],
    ['missing password', { email: 'x@example.com' }, 'password'],
    ['invalid email', { email: 'not-an-email', password: 'password123' }, 'email'],
    ['empty email', { email: '', password: 'password123' }, 'email'],
    ['short password', { email: 'short@example.com', password: 'short' }, 'password'],
    ['huge password', { email: 'huge@example.com', password: 'x'.repeat(5000) }, 'password'],
    ['wrong type', { email: 'typed@example.com', password: 12345678 }, 'password'],
    ['unknown field', { email: 'extra@example.com', password: 'password123', admin: true }, 'admin'],
    ['empty name', { email: 'name@example.com', password: 'password123', name: '' }, 'name'],
    ['blank name', { email: 'blank@example.com', password: 'password123', name: ' \t\n ' }, 'name'],
    ['name with a NUL character', { email: 'nul@example.com', password: 'password123', name: 'Ada\u0000Lovelace' }, 'name'],
    ['a space inside the email', { email: 'a b@example.com', password: 'password123' }, 'email'],
    ['array body', [1, 2, 3], undefined],
  ]
  for (const [label, body, field] of invalidBodies) {
    it(`answers 400 VALIDATION_FAILED for ${label}, naming the field, before any hash, and writes nothing`, async () => {
      const users = await userCount()
      const hashes = service.engine.stats().completed
      const response = await request(service, 'POST', '/api/v1/auth/register', { body })
      assert.equal(service.engine.stats().completed, hashes, 'no hash was spent')
      assert.equal(response.status, 400)
      assert.equal(response.body.error.code, 'VALIDATION_FAILED')
      assert.equal(typeof response.body.error.message, 'string')
      if (field !== undefined) {
        assert.equal(response.body.error.field, field)
        assert.ok(response.body.error.message.includes(field), response.body.error.message)
      }
      assert.equal(await userCount(), users)
    })
  }

  it('accepts an email with surrounding spaces, stored trimmed', async () => {
    const email = uniqueEmail('spaced')
    const response = await request(service, 'POST', '/api/v1/auth/register', { body: { email: ` ${email}\t`, password: 'a long enough password' } })
    assert.equal(response.status, 201, JSON.stringify(response.body))
    assert.equal(response.body.user.email, email.toLowerCase())
  })

  it('says in words what a blank or NUL-bearing name lacks', async () => {
    const response = await request(service, 'POST', '/api/v1/auth/register', { body: { email: uniqueEmail(), password: 'password123', name: '\u0000' } })
    assert.equal(response.body.error.message, 'body.name must contain a non-space character and no NUL character')
  })

  it('answers 400 BODY_INVALID_JSON for malformed JSON', async () => {
    const response = await request(service, 'POST', '/api/v1/auth/register', { body: '{"email": "a@b.co", "password": ' })
    assert.equal(response.status, 400)
    assert.equal(response.body.error.code, 'BODY_INVALID_JSON')
  })

  it('answers 415 UNSUPPORTED_MEDIA_TYPE for a body that is not JSON', async () => {
    const response = await request(service, 'POST', '/api/v1/auth/register', { body: 'email=a@b.co&password=12345678', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    assert.equal(response.status, 415)
    assert.equal(response.body.error.code, 'UNSUPPORTED_MEDIA_TYPE')
  })

  it('answers 413 BODY_TOO_LARGE past the body limit, and writes nothing', async () => {
    const users = await userCount()
    const response = await request(service, 'POST', '/api/v1/auth/register', { body: { email: 'big@example.com', password: 'password123', name: 'x'.repeat(service.config.bodyLimitBytes) } })
    assert.equal(response.status, 413)
    assert.equal(response.body.error.code, 'BODY_TOO_LARGE')
    assert.equal(await userCount(), users)
  })

  it('answers 404 NOT_FOUND as JSON for unknown routes', async () => {
    const response = await request(service, 'GET', '/api/v1/nope')
    assert.equal(response.status, 404)
    assert.equal(response.body.error.code, 'NOT_FOUND')
  })

  it('keeps one account when the same email registers twice at once', async () => {
    const email = uniqueEmail('race')
    const responses = await Promise.all([0, 1, 2, 3].map(async () => await request(service, 'POST', '/api/v1/auth/register', { body: { email, password: 'password race 1' } })))
    assert.deepEqual(responses.map((r) => r.status).sort(), [201, 409, 409, 409])
    const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM users WHERE email = $1', [email.toLowerCase()])
    assert.equal(rows[0]?.n, 1)
  })
})
