import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createTestDatabase, type TestDatabase } from '../../helpers/database.js'
import { capturingLogger, cheapPolicy, registerUser, request, startTestService, type TestService } from '../../helpers/service.js'

async function storedHash (db: TestDatabase, email: string): Promise<string> {
  const { rows } = await db.pool.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE email = $1', [email.toLowerCase()])
  return rows[0]?.password_hash ?? ''
}

/**
 * The re-hash runs after the login is answered; the service keeps it in `backgroundJobs`
 * from before the answer until it is written. Waiting on those (the code's own signal, not a
 * sleep) and then reading the row once: a re-hash that never happened shows as the old hash.
 */
async function hashAfterRehashes (service: TestService, email: string): Promise<string> {
  await Promise.allSettled([...service.app.auth.backgroundJobs])
  return await storedHash(service.db, email)
}

describe('re-hash on login', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })

  it('moves a bcrypt hash to argon2id after a good login, and the password keeps working', async () => {
    const old = await startTestService({ db, policy: { ...cheapPolicy, algorithm: 'bcrypt' } })
    const { email, password } = await registerUser(old)
    const account = { email, password }
    await old.close()
    assert.match(await storedHash(db, account.email), /^\$2[aby]\$04\$/)

    const current = await startTestService({ db, policy: cheapPolicy })
    try {
      const login = await request(current, 'POST', '/api/v1/auth/login', { body: { email: account.email, password: account.password } })
      assert.equal(login.status, 200)
      assert.match(await hashAfterRehashes(current, account.email), /^\$argon2id\$v=19\$m=1024,t=1,p=1\$/)
      const again = await request(current, 'POST', '/api/v1/auth/login', { body: { email: account.email, password: account.password } })
      assert.equal(again.status, 200)
    } finally {
      await current.close()
    }
  })

  it('re-hashes when only the parameters changed', async () => {
    const old = await startTestService({ db, policy: cheapPolicy })
    const { email, password } = await registerUser(old)
    const account = { email, password }
    await old.close()
    const stronger = { ...cheapPolicy, argon2: { ...cheapPolicy.argon2, memoryKiB: 2048, timeCost: 2 } }
    const current = await startTestService({ db, policy: stronger })
    try {
      assert.equal((await request(current, 'POST', '/api/v1/auth/login', { body: account })).status, 200)
      assert.match(await hashAfterRehashes(current, account.email), /^\$argon2id\$v=19\$m=2048,t=2,p=1\$/)
    } finally {
      await current.close()
    }
  })

  it('does not re-hash after a failed login', async () => {
    const old = await startTestService({ db, policy: { ...cheapPolicy, algorithm: 'scrypt' } })
    const { email, password } = await registerUser(old)
    const account = { email, password }
    await old.close()
    const before = await storedHash(db, account.email)
    const current = await startTestService({ db, policy: cheapPolicy })
    try {
      assert.equal((await request(current, 'POST', '/api/v1/auth/login', { body: { email: account.email, password: 'wrong password' } })).status, 401)
      assert.equal(current.app.auth.backgroundJobs.size, 0, 'no re-hash was started')
      assert.equal(await hashAfterRehashes(current, account.email), before)
      // The same account does move on a good login: the check above could have seen a re-hash.
      assert.equal((await request(current, 'POST', '/api/v1/auth/login', { body: account })).status, 200)
      assert.match(await hashAfterRehashes(current, account.email), /^\$argon2id\$/)
    } finally {
      await current.close()
    }
  })

  it('still signs in when the re-hash fails (a 100-byte password cannot move to bcrypt)', async () => {
    const old = await startTestService({ db, policy: cheapPolicy })
    const { email, password } = await registerUser(old, { password: 'p'.repeat(100) })
    const account = { email, password }
    await old.close()
    const before = await storedHash(db, account.email)
    const { logger, lines } = capturingLogger()
    const current = await startTestService({ db, policy: { ...cheapPolicy, algorithm: 'bcrypt' }, logger })
    try {
      const login = await request(current, 'POST', '/api/v1/auth/login', { body: account })
      assert.equal(login.status, 200)
      assert.equal(await hashAfterRehashes(current, account.email), before)
      const skipped = lines.filter((line) => line.msg === 'password re-hash skipped')
      assert.equal(skipped.length, 1, 'the re-hash was tried and failed, and says so')
      assert.equal(skipped[0]?.code, 'PASSWORD_TOO_LONG')
    } finally {
      await current.close()
    }
  })

  const refusedHashes: Array<[string, string, string]> = [
    ['absurd parameters (bcrypt cost 31)', '$2b$31$abcdefghijklmnopqrstuu5Tb6QpwjuAQ6hmcVNO2Yz3mCLqPDtRS', 'HASH_PARAMS_OUT_OF_BOUNDS'],
    ['an unknown format', '$1$md5crypt$0123456789abcdef', 'HASH_FORMAT_UNKNOWN'],
  ]
  for (const [what, badHash, code] of refusedHashes) {
    it(`answers a stored hash with ${what} as a wrong password, at a wrong password's cost, and logs it`, async () => {
      const { logger, lines } = capturingLogger()
      const service = await startTestService({ db, policy: cheapPolicy, logger })
      try {
        const { email, password } = await registerUser(service)
        await db.pool.query('UPDATE users SET password_hash = $2 WHERE email = $1', [email.toLowerCase(), badHash])
        const before = service.engine.stats().completed
        const started = performance.now()
        const login = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
        const ms = performance.now() - started
        assert.equal(login.status, 401)
        assert.equal(login.body.error.code, 'AUTH_INVALID_CREDENTIALS')
        assert.ok(ms < 2000, `answered in ${ms.toFixed(0)} ms (cost 31 would take days)`)
        assert.equal(service.engine.stats().completed - before, 1, 'one dummy verify, as for a wrong password; the stored hash was not computed')
        // Nothing tells this account apart from an unknown email.
        const unknown = await request(service, 'POST', '/api/v1/auth/login', { body: { email: `nobody-${email}`, password } })
        assert.deepEqual(login.body, unknown.body)
        assert.deepEqual([...login.headers.keys()].sort(), [...unknown.headers.keys()].sort())
        // The operator hears of it, at error level, without the hash or the password.
        const logged = lines.filter((line) => line.level === 50)
        assert.equal(logged.length, 1, JSON.stringify(lines))
        assert.equal(logged[0]?.code, code)
        const text = JSON.stringify(logged)
        assert.ok(!text.includes(badHash) && !text.includes(password), text)
      } finally {
        await service.close()
      }
    })

    it(`answers a signed-in user's password given again against ${what} as a wrong one, counted, at a wrong password's cost`, async () => {
      const { logger, lines } = capturingLogger()
      const service = await startTestService({ db, policy: cheapPolicy, logger })
      try {
        const { email, password, body } = await registerUser(service)
        await db.pool.query('UPDATE users SET password_hash = $2 WHERE email = $1', [email.toLowerCase(), badHash])
        const before = service.engine.stats().completed
        const started = performance.now()
        const change = await request(service, 'POST', '/api/v1/me/password', { token: body.accessToken as string, body: { currentPassword: password, newPassword: 'a brand new passphrase' } })
        const ms = performance.now() - started
        assert.deepEqual([change.status, change.body.error.code], [403, 'CURRENT_PASSWORD_INCORRECT'])
        assert.ok(ms < 2000, `answered in ${ms.toFixed(0)} ms (cost 31 would take days)`)
        assert.equal(service.engine.stats().completed - before, 1, 'one dummy verify, as for a wrong password; the stored hash was not computed')
        const { sid } = JSON.parse(Buffer.from(String(body.accessToken).split('.')[1] ?? '', 'base64url').toString()) as { sid: string }
        const { rows } = await db.pool.query<{ failures: number }>("SELECT failures FROM login_failures WHERE scope = 'device' AND key = $1", [`session:${sid}`])
        assert.deepEqual(rows.map((row) => row.failures), [1], 'counted as a failed check of the signed-in session')
        const logged = lines.filter((line) => line.level === 50)
        assert.equal(logged.length, 1, JSON.stringify(lines))
        assert.equal(logged[0]?.code, code)
        assert.match(String(logged[0]?.msg), /password check is answered as a wrong password/)
        const { rows: [stored] } = await db.pool.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE email = $1', [email.toLowerCase()])
        assert.equal(stored?.password_hash, badHash, 'nothing written over the refused hash')
      } finally {
        await service.close()
      }
    })
  }
})

describe('bcrypt and long passwords', () => {
  it('refuses to register a password over 72 bytes under bcrypt instead of truncating it', async () => {
    const service = await startTestService({ policy: { ...cheapPolicy, algorithm: 'bcrypt' } })
    try {
      const response = await request(service, 'POST', '/api/v1/auth/register', { body: { email: 'long@example.com', password: 'é'.repeat(40) } })
      assert.equal(response.status, 400)
      assert.equal(response.body.error.code, 'PASSWORD_TOO_LONG')
      assert.equal(response.body.error.field, 'password')
      const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM users')
      assert.equal(rows[0]?.n, 0)
    } finally {
      await service.close()
    }
  })
})
