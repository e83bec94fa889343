/**
 * A signed-in user's second factors on a real service: TOTP enrolment (shown once, confirmed by a
 * first code), its secret sealed at rest, recovery codes made anew, removal behind the password or
 * a code, and every other session ended when a factor is added or removed.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { totpCodeAt, totpSecretFromBase32 } from '../../../src/accounts/factors/totp.js'
import { openSecret, parseKeyEncryptionKey } from '../../../src/keys/sealing.js'
import { registerUser, request, startTestService, testKeyEncryptionKey, type TestService } from '../../helpers/service.js'
import { enrolTotp, movableWallClock, passwordLogin, secondStep, stepMs } from '../../helpers/factors/second-factor.js'

describe('second factors of a signed-in user', () => {
  const clock = movableWallClock()
  let service: TestService
  before(async () => { service = await startTestService({ now: clock.now }) })
  after(async () => { await service.close() })

  const factorsOf = async (token: string): Promise<Array<Record<string, unknown>>> => {
    const response = await request(service, 'GET', '/api/v1/me/factors', { token })
    assert.equal(response.status, 200)
    return response.body.items as Array<Record<string, unknown>>
  }
  const userIdOf = async (email: string): Promise<string> => (await service.db.pool.query<{ id: string }>('SELECT id FROM users WHERE email = $1', [email])).rows[0]?.id ?? ''

  it('enrolment: the secret shown once waits for a first code; a wrong code writes nothing; the right one confirms it and answers ten recovery codes', async () => {
    const { body } = await registerUser(service)
    const token = body.accessToken as string
    assert.deepEqual(await factorsOf(token), [])
    const first = await request(service, 'POST', '/api/v1/me/factors/totp', { token })
    assert.equal(first.status, 201)
    const uri = new URL(first.body.uri as string)
    assert.equal(uri.protocol, 'otpauth:')
    assert.equal(uri.searchParams.get('secret'), first.body.secret)
    const second = await request(service, 'POST', '/api/v1/me/factors/totp', { token })
    assert.notEqual(second.body.secret, first.body.secret, 'asking again replaces the secret still waiting')
    assert.deepEqual((await factorsOf(token)).map((item) => [item.method, item.confirmed]), [['totp', false]])

    const secret = totpSecretFromBase32(second.body.secret as string)
    const oldSecret = totpSecretFromBase32(first.body.secret as string)
    const wrong = await request(service, 'POST', '/api/v1/me/factors/totp/confirm', { token, body: { code: totpCodeAt(oldSecret, clock.now()) } })
    assert.deepEqual([wrong.status, wrong.body.error.code], [401, 'SECOND_FACTOR_INVALID'])
    assert.deepEqual((await factorsOf(token)).map((item) => [item.method, item.confirmed]), [['totp', false]], 'still waiting, no recovery codes')

    const confirmed = await request(service, 'POST', '/api/v1/me/factors/totp/confirm', { token, body: { code: totpCodeAt(secret, clock.now()) } })
    assert.equal(confirmed.status, 200)
    assert.equal((confirmed.body.recoveryCodes as string[]).length, 10)
    for (const code of confirmed.body.recoveryCodes as string[]) assert.match(code, /^[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}$/)
    assert.deepEqual((await factorsOf(token)).map((item) => [item.method, item.confirmed ?? item.remaining]), [['totp', true], ['recovery_code', 10]])
    const again = await request(service, 'POST', '/api/v1/me/factors/totp', { token })
    assert.deepEqual([again.status, again.body.error.code], [409, 'TOTP_ALREADY_ENROLLED'])
  })

  it('the TOTP secret is not readable from the database without the key-encryption key; recovery codes are kept as keyed hashes', async () => {
    const { email, body } = await registerUser(service)
    const begun = await request(service, 'POST', '/api/v1/me/factors/totp', { token: body.accessToken as string })
    const secret = totpSecretFromBase32(begun.body.secret as string)
    const userId = await userIdOf(email)
    const { rows } = await service.db.pool.query<{ secret_sealed: Buffer }>('SELECT secret_sealed FROM totp_factors WHERE user_id = $1', [userId])
    const sealed = rows[0]?.secret_sealed ?? Buffer.alloc(0)
    assert.equal(sealed.indexOf(secret), -1, 'the raw secret is not in the row')
    assert.ok(!sealed.toString('latin1').includes(begun.body.secret as string), 'nor its base32 text')
    const kek = parseKeyEncryptionKey(testKeyEncryptionKey, 'test')
    assert.equal(openSecret(Buffer.alloc(32, 7), `totp:${userId}`, sealed), undefined, 'another key opens nothing')
    assert.equal(openSecret(kek, `totp:${await userIdOf((await registerUser(service)).email)}`, sealed), undefined, 'copied to another user, it does not open')
    assert.deepEqual(openSecret(kek, `totp:${userId}`, sealed), secret, 'the key-encryption key opens it')

    const confirmed = await request(service, 'POST', '/api/v1/me/factors/totp/confirm', { token: body.accessToken as string, body: { code: totpCodeAt(secret, clock.now()) } })
    const codes = confirmed.body.recoveryCodes as string[]
    const stored = (await service.db.pool.query<{ code_hash: Buffer }>('SELECT code_hash FROM recovery_codes WHERE user_id = $1', [userId])).rows.map((row) => row.code_hash.toString('hex'))
    assert.equal(stored.length, 10)
    for (const code of codes) {
      const plain = code.replaceAll('-', '')
      assert.ok(!stored.includes(createHash('sha256').update(plain).digest('hex')), 'not an unkeyed hash')
      assert.ok(!stored.some((hash) => hash.includes(Buffer.from(plain).toString('hex'))), 'not the code itself')
    }
  })

  it('adding a factor ends every other session; removing it too; the current one keeps working', async () => {
    const { email, password, body } = await registerUser(service)
    const other = await passwordLogin(service, email, password)
    const token = body.accessToken as string
    const { secret } = await enrolTotp(service, token, clock.now)
    const ended = await request(service, 'GET', '/api/v1/me', { token: other.accessToken as string })
    assert.deepEqual([ended.status, ended.body.error.code], [401, 'AUTH_SESSION_ENDED'])
    assert.equal((await request(service, 'GET', '/api/v1/me', { token })).status, 200)

    clock.advance(stepMs)
    const challenge = await passwordLogin(service, email, password)
    const another = await secondStep(service, challenge.challenge as string, 'totp', totpCodeAt(secret, clock.now()))
    assert.equal(another.status, 200)
    const removed = await request(service, 'DELETE', '/api/v1/me/factors/totp', { token, body: { password } })
    assert.equal(removed.status, 204)
    assert.equal((await request(service, 'GET', '/api/v1/me', { token: another.body.accessToken as string })).body.error.code, 'AUTH_SESSION_ENDED')
    assert.equal((await request(service, 'GET', '/api/v1/me', { token })).status, 200)
  })

  it('removal needs the password (a wrong one is 403 and removes nothing) or a code; afterwards the password alone signs in', async () => {
    const { email, password, body } = await registerUser(service)
    const token = body.accessToken as string
    const { secret } = await enrolTotp(service, token, clock.now)
    const none = await request(service, 'DELETE', '/api/v1/me/factors/totp', { token, body: {} })
    assert.equal(none.status, 400)
    const wrong = await request(service, 'DELETE', '/api/v1/me/factors/totp', { token, body: { password: 'not the password at all' } })
    assert.deepEqual([wrong.status, wrong.body.error.code], [403, 'CURRENT_PASSWORD_INCORRECT'])
    assert.deepEqual((await factorsOf(token)).map((item) => item.method), ['totp', 'recovery_code'], 'nothing removed')
    const reused = await request(service, 'DELETE', '/api/v1/me/factors/totp', { token, body: { method: 'totp', code: totpCodeAt(secret, clock.now()) } })
    assert.deepEqual([reused.status, reused.body.error.code], [401, 'TOTP_CODE_REUSED'], 'the confirming code proves nothing again')
    clock.advance(stepMs)
    const byCode = await request(service, 'DELETE', '/api/v1/me/factors/totp', { token, body: { method: 'totp', code: totpCodeAt(secret, clock.now()) } })
    assert.equal(byCode.status, 204)
    assert.deepEqual(await factorsOf(token), [], 'the recovery codes went with it')
    const gone = await request(service, 'DELETE', '/api/v1/me/factors/totp', { token, body: { password } })
    assert.deepEqual([gone.status, gone.body.error.code], [404, 'SECOND_FACTOR_NOT_FOUND'])
    const signedIn = await passwordLogin(service, email, password)
    assert.equal(typeof signedIn.accessToken, 'string', 'no challenge any more')
  })

  it('new recovery codes void the old ones; they need a proof and a confirmed factor', async () => {
    const { email, password, body } = await registerUser(service)
    const token = body.accessToken as string
    const without = await request(service, 'POST', '/api/v1/me/factors/recovery-codes', { token, body: { password } })
    assert.deepEqual([without.status, without.body.error.code], [404, 'SECOND_FACTOR_NOT_FOUND'])
    const { recoveryCodes: old } = await enrolTotp(service, token, clock.now)
    const wrong = await request(service, 'POST', '/api/v1/me/factors/recovery-codes', { token, body: { password: 'not the password at all' } })
    assert.equal(wrong.status, 403)
    const byOldCode = await request(service, 'POST', '/api/v1/me/factors/recovery-codes', { token, body: { method: 'recovery_code', code: old[0] } })
    assert.equal(byOldCode.status, 200)
    const fresh = byOldCode.body.recoveryCodes as string[]
    assert.equal(fresh.length, 10)
    assert.equal(fresh.filter((code) => old.includes(code)).length, 0)
    const first = await passwordLogin(service, email, password)
    const oldRefused = await secondStep(service, first.challenge as string, 'recovery_code', old[1] ?? '')
    assert.equal(oldRefused.body.error.code, 'SECOND_FACTOR_INVALID', 'the old codes stopped working')
    assert.equal((await secondStep(service, first.challenge as string, 'recovery_code', fresh[0] ?? '')).status, 200)
  })
})
