/**
 * Passwords through the real service: NFC on register and login, hashes of the raw form (made
 * before normalisation) still verifying and moving to NFC, and the policy's refusals costing no hash.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { HashPoolStats } from '../../src/hashing/types.js'
import { registerUser, request, startTestService, uniqueEmail, type TestService } from '../helpers/service.js'

const nfc = 'caf\u00e9 cr\u00e8me 42'
const nfd = 'cafe\u0301 cre\u0300me 42'

/** Every counter of the hash pool that a request could move (a hash run, a refusal, a cancel...). */
function workDone (stats: HashPoolStats): Record<string, number> {
  const { completed, rejected, deadlineExceeded, cancelled, failed } = stats
  return { completed, rejected, deadlineExceeded, cancelled, failed }
}

async function storedHash (service: TestService, email: string): Promise<string> {
  const { rows } = await service.db.pool.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE email = $1', [email.toLowerCase()])
  const hash = rows[0]?.password_hash
  assert.ok(hash !== undefined, `a user ${email}`)
  return hash
}

/** Background re-hashes are tracked by the service until written: wait on that, not on a clock. */
async function rehashesDone (service: TestService): Promise<void> {
  await Promise.allSettled([...service.app.auth.backgroundJobs])
}

/** Hashes and verifies run by `action` (background re-hashes it started included). */
async function verifiesDuring (service: TestService, action: () => Promise<unknown>): Promise<number> {
  await rehashesDone(service)
  const before = service.engine.stats().completed
  await action()
  await rehashesDone(service)
  return service.engine.stats().completed - before
}

async function login (service: TestService, email: string, password: string): Promise<number> {
  return (await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).status
}

describe('passwords are Unicode-normalised (NFC)', () => {
  let service: TestService
  before(async () => { service = await startTestService({ config: { loginThrottleAccountFailures: 1000, loginThrottleAddressFailures: 1000 } }) })
  after(async () => { await service.close() })

  it('"café" registered composed (NFC) signs in typed decomposed (NFD)', async () => {
    assert.notEqual(nfc, nfd)
    const { email } = await registerUser(service, { password: nfc })
    assert.equal(await login(service, email, nfd), 200)
    assert.equal(await login(service, email, nfc), 200)
  })

  it('"café" registered decomposed signs in typed composed: the NFC form is what is hashed', async () => {
    const { email } = await registerUser(service, { password: nfd })
    assert.equal(await login(service, email, nfc), 200)
    // One verify for each: the stored hash is of the NFC form, which both forms normalise to.
    assert.equal(await verifiesDuring(service, async () => await login(service, email, nfd)), 1)
    assert.equal(await verifiesDuring(service, async () => await login(service, email, nfc)), 1)
  })

  it('a hash of the raw NFD form (made before normalisation) signs in, then moves to the NFC form', async () => {
    const { email } = await registerUser(service, { password: 'a placeholder pass phrase' })
    // What a service before NFC stored for an NFD password: a hash of the text as typed.
    const rawHash = await service.engine.hash(nfd, { deadlineMs: 10_000 })
    await service.db.pool.query('UPDATE users SET password_hash = $2 WHERE email = $1', [email.toLowerCase(), rawHash])

    // Typed in NFC, the old hash cannot match (the user never typed that form before).
    assert.equal(await login(service, email, nfc), 401)
    assert.equal(await storedHash(service, email), rawHash, 'no re-hash after a failure')

    // Typed in NFD: the NFC form is verified first and fails, then the raw form matches: two verifies, then a re-hash.
    let status = 0
    const work = await verifiesDuring(service, async () => { status = await login(service, email, nfd) })
    assert.equal(status, 200)
    assert.equal(work, 3, 'the NFC verify, the raw verify, and the background re-hash')
    const movedHash = await storedHash(service, email)
    assert.notEqual(movedHash, rawHash, 'the hash was replaced')

    // The new hash is of the NFC form: NFC signs in with one verify and nothing more to do.
    assert.equal(await verifiesDuring(service, async () => { status = await login(service, email, nfc) }), 1)
    assert.equal(status, 200)
    assert.equal(await verifiesDuring(service, async () => { status = await login(service, email, nfd) }), 1)
    assert.equal(status, 200)
    assert.equal(await storedHash(service, email), movedHash)
  })

  it('refuses a lone surrogate with 400 at register and at login, before any hash', async () => {
    const { email } = await registerUser(service)
    const malformed = '\ud800 lone surrogate'
    // JSON.stringify escapes it as "\ud800": valid JSON, malformed text once parsed.
    assert.match(JSON.stringify(malformed), /\\ud800/)
    const before = workDone(service.engine.stats())
    const registered = await request(service, 'POST', '/api/v1/auth/register', { body: { email: uniqueEmail('lone'), password: malformed } })
    assert.equal(registered.status, 400)
    assert.equal(registered.body.error.code, 'PASSWORD_MALFORMED')
    assert.equal(registered.body.error.field, 'password')
    for (const loginEmail of [email, uniqueEmail('lone-unknown')]) {
      const response = await request(service, 'POST', '/api/v1/auth/login', { body: { email: loginEmail, password: malformed } })
      assert.equal(response.status, 400)
      assert.equal(response.body.error.code, 'PASSWORD_MALFORMED')
    }
    assert.deepEqual(workDone(service.engine.stats()), before, 'no hash, verify or refusal was counted')
    // Two lone surrogates that would both become U+FFFD in UTF-8 are not one password: neither gets in.
    assert.equal(await login(service, email, '\udfff lone surrogate'), 400)
  })

  it('refuses eight spaces at register with PASSWORD_BLANK, and writes nothing', async () => {
    const blankEmail = uniqueEmail('blank')
    const before = workDone(service.engine.stats())
    const response = await request(service, 'POST', '/api/v1/auth/register', { body: { email: blankEmail, password: '        ' } })
    assert.equal(response.status, 400)
    assert.equal(response.body.error.code, 'PASSWORD_BLANK')
    assert.equal(response.body.error.field, 'password')
    assert.deepEqual(workDone(service.engine.stats()), before, 'no hash')
    const { rowCount } = await service.db.pool.query('SELECT 1 FROM users WHERE email = $1', [blankEmail])
    assert.equal(rowCount, 0)
  })

  it('refuses a listed common password at register with PASSWORD_TOO_COMMON, in any case', async () => {
    for (const password of ['password123', 'PassWord123', 'iloveyou']) {
      const response = await request(service, 'POST', '/api/v1/auth/register', { body: { email: uniqueEmail('common'), password } })
      assert.equal(response.status, 400, password)
      assert.equal(response.body.error.code, 'PASSWORD_TOO_COMMON')
      assert.equal(response.body.error.field, 'password')
    }
  })

  it('still signs in an account whose existing password is on the list (the list applies to new passwords)', async () => {
    const { email } = await registerUser(service)
    const oldHash = await service.engine.hash('password123', { deadlineMs: 10_000 })
    await service.db.pool.query('UPDATE users SET password_hash = $2 WHERE email = $1', [email.toLowerCase(), oldHash])
    assert.equal(await login(service, email, 'password123'), 200)
  })

  it('costs an unknown email as many verifies as a known one with a wrong password, for the same input', async () => {
    const { email } = await registerUser(service)
    for (const wrong of ['wrong but ascii', 'wro\u0301ng and decomposed']) {
      const known = await verifiesDuring(service, async () => assert.equal(await login(service, email, wrong), 401))
      const unknown = await verifiesDuring(service, async () => assert.equal(await login(service, uniqueEmail('ghost'), wrong), 401))
      assert.equal(unknown, known, `${JSON.stringify(wrong)}: the same number of verifies`)
      // ASCII (already NFC): one verify, as before normalisation; text not in NFC: both forms.
      assert.equal(known, wrong.normalize('NFC') === wrong ? 1 : 2)
    }
  })
})
