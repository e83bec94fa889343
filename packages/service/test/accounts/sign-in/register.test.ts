import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerUser, request, seedPolicy, startTestService, uniqueEmail, type JsonResponse, type TestService } from '../../helpers/service.js'

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

/** Headers an answer carries, but the date (every answer has its own). */
function headersMinusDate (response: JsonResponse): Record<string, string> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => { if (name !== 'date') headers[name] = value })
  return headers
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

describe('registration by default (enumeration-safe): a taken address answers as a free one', () => {
  let service: TestService
  before(async () => {
    // The default mode, and a real hash cost (bcrypt 10, tens of milliseconds): a path that skipped
    // the hash would stand out from the database's few milliseconds.
    service = await startTestService({ policy: seedPolicy, threads: 1, config: { registrationMode: 'enumeration-safe' } })
  })
  after(async () => { await service.close() })

  it('the same status, body and headers, the same one hash, and round trips alike (medians of alternated runs)', async (t) => {
    const taken: string[] = []
    for (let i = 0; i < 12; i++) {
      const email = uniqueEmail('taken')
      assert.equal((await request(service, 'POST', '/api/v1/auth/register', { body: { email, password: 'the first owner\'s password' } })).status, 202)
      taken.push(email)
    }
    const hashes: string[] = []
    const stop = service.engine.onTask((event) => { hashes.push(`${event.kind}:${event.outcome}`) })
    const timings: Record<'taken' | 'free', number[]> = { taken: [], free: [] }
    const answers: Record<'taken' | 'free', JsonResponse[]> = { taken: [], free: [] }
    try {
      for (const takenEmail of taken) {
        for (const [label, email] of [['taken', takenEmail], ['free', uniqueEmail('free')]] as const) {
          const before = hashes.length
          const sent = performance.now()
          const response = await request(service, 'POST', '/api/v1/auth/register', { body: { email, password: 'someone else\'s password' } })
          timings[label].push(performance.now() - sent)
          answers[label].push(response)
          assert.deepEqual(hashes.slice(before), ['hash:ok'], `${label}: one hash of the new password, whether or not the address is taken`)
        }
      }
    } finally {
      stop()
    }
    for (const [index, takenAnswer] of answers.taken.entries()) {
      const freeAnswer = answers.free[index]
      assert.ok(freeAnswer !== undefined)
      assert.equal(takenAnswer.status, 202)
      assert.equal(freeAnswer.status, 202)
      assert.deepEqual(takenAnswer.body, freeAnswer.body)
      assert.deepEqual(headersMinusDate(takenAnswer), headersMinusDate(freeAnswer))
    }
    const [takenMs, freeMs] = [median(timings.taken), median(timings.free)]
    t.diagnostic(`median round trip: taken ${takenMs.toFixed(1)} ms, free ${freeMs.toFixed(1)} ms (12 of each, alternated), ratio ${(takenMs / freeMs).toFixed(2)}`)
    // Generous (the machine is shared): a path without the hash would be several times faster.
    assert.ok(takenMs / freeMs > 0.5 && takenMs / freeMs < 2, `medians ${takenMs.toFixed(1)} and ${freeMs.toFixed(1)} ms`)
    const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM users WHERE email = ANY($1)', [taken])
    assert.equal(rows[0]?.n, 12, 'a taken address keeps its one account')
  })
})

describe('the registration throttle', () => {
  let service: TestService
  before(async () => {
    service = await startTestService({ config: { registerThrottleClientRequests: 3, registerThrottleAccountRequests: 2, registerThrottleWindowSeconds: 3600 } })
  })
  after(async () => { await service.close() })

  async function users (): Promise<number> {
    const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM users')
    return rows[0]?.n ?? -1
  }

  it('one client: past its registrations in the window, 429 with Retry-After, before any hash, and nothing written', async () => {
    const from = '127.0.0.61'
    for (let i = 0; i < 3; i++) {
      assert.equal((await request(service, 'POST', '/api/v1/auth/register', { body: { email: uniqueEmail('client'), password: 'a long enough password' }, from })).status, 201)
    }
    const count = await users()
    const hashes: string[] = []
    const stop = service.engine.onTask((event) => { hashes.push(event.kind) })
    try {
      const refused = await request(service, 'POST', '/api/v1/auth/register', { body: { email: uniqueEmail('client'), password: 'a long enough password' }, from })
      assert.equal(refused.status, 429)
      assert.equal(refused.body.error.code, 'TOO_MANY_ATTEMPTS')
      const retryAfter = Number(refused.headers.get('retry-after'))
      assert.ok(retryAfter > 0 && retryAfter <= 3600, `Retry-After ${retryAfter}`)
    } finally {
      stop()
    }
    assert.deepEqual(hashes, [], 'no hash for a refused registration')
    assert.equal(await users(), count)
    // Another client is not held by this one's registrations.
    assert.equal((await request(service, 'POST', '/api/v1/auth/register', { body: { email: uniqueEmail('client'), password: 'a long enough password' }, from: '127.0.0.62' })).status, 201)
  })

  it('one mailbox: its spellings (case, +tags, dots) from many clients count as one', async () => {
    const local = `mailbox${Date.now()}`
    const spellings = [`${local}@example.com`, `${local}+1@example.com`, `${local.slice(0, 3)}.${local.slice(3)}+2@Example.com`]
    const statuses = []
    for (const [index, email] of spellings.entries()) {
      statuses.push((await request(service, 'POST', '/api/v1/auth/register', { body: { email, password: 'a long enough password' }, from: `127.0.0.${70 + index}` })).status)
    }
    assert.deepEqual(statuses, [201, 201, 429])
  })
})
