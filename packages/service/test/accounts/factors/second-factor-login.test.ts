/**
 * The sign-in with a second factor on a real service: password then TOTP or recovery code, each
 * code once, the window, the challenge (single use, expiring), the throttle of guesses, `amr` in
 * the access tokens, and the settings `required` and `off`.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { decodeJwt } from 'jose'
import { totpCodeAt } from '../../../src/accounts/factors/totp.js'
import { capturingLogger, registerUser, request, startTestService, type TestService } from '../../helpers/service.js'
import { enrolTotp, movableWallClock, passwordLogin, secondStep, stepMs } from '../../helpers/factors/second-factor.js'

describe('sign-in with a second factor', () => {
  const clock = movableWallClock()
  const { logger, lines } = capturingLogger('info')
  let service: TestService
  // Three free failures, then a minute's wait: a throttled guess stays throttled however slow the machine.
  before(async () => { service = await startTestService({ now: clock.now, logger, config: { loginThrottleAccountFailures: 3, loginThrottleBaseDelaySeconds: 60 } }) })
  after(async () => { await service.close() })

  /** A registered user with TOTP confirmed at the current step; the clock moved one step on, so the next code is new. */
  const userWithTotp = async (): Promise<{ email: string, password: string, secret: Buffer, recoveryCodes: string[], accessToken: string }> => {
    const { email, password, body } = await registerUser(service)
    const enrolled = await enrolTotp(service, body.accessToken as string, clock.now)
    clock.advance(stepMs)
    return { email, password, ...enrolled, accessToken: body.accessToken as string }
  }

  it('a password login of an account with TOTP answers a challenge, no tokens; its code completes the sign-in, amr pwd+otp+mfa, kept by refresh', async () => {
    const { email, password, secret } = await userWithTotp()
    const first = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
    assert.equal(first.status, 200)
    assert.equal(first.headers.get('tollbooth-device'), null, 'no device token before the second step')
    assert.deepEqual(Object.keys(first.body as object).sort(), ['challenge', 'expiresIn', 'methods', 'mfaRequired'])
    assert.deepEqual(first.body.methods, ['totp', 'recovery_code'])
    const done = await secondStep(service, first.body.challenge as string, 'totp', totpCodeAt(secret, clock.now()))
    assert.equal(done.status, 200, JSON.stringify(done.body))
    assert.ok(typeof done.headers.get('tollbooth-device') === 'string', 'the device token comes with the session')
    assert.deepEqual(decodeJwt(done.body.accessToken as string).amr, ['pwd', 'otp', 'mfa'])
    assert.equal((await request(service, 'GET', '/api/v1/me', { token: done.body.accessToken as string })).status, 200)
    const refreshed = await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: done.body.refreshToken } })
    assert.equal(refreshed.status, 200)
    assert.deepEqual(decodeJwt(refreshed.body.accessToken as string).amr, ['pwd', 'otp', 'mfa'], 'the session keeps how it signed in')
  })

  it('an account without a factor signs in with its password alone: amr pwd', async () => {
    const { email, password } = await registerUser(service)
    const body = await passwordLogin(service, email, password)
    assert.deepEqual(decodeJwt(body.accessToken as string).amr, ['pwd'])
  })

  it('a code works once: again (another challenge) is TOTP_CODE_REUSED; of two submissions at once exactly one wins', async () => {
    const { email, password, secret } = await userWithTotp()
    const code = totpCodeAt(secret, clock.now())
    const first = await passwordLogin(service, email, password)
    assert.equal((await secondStep(service, first.challenge as string, 'totp', code)).status, 200)
    const again = await passwordLogin(service, email, password)
    const reused = await secondStep(service, again.challenge as string, 'totp', code)
    assert.deepEqual([reused.status, reused.body.error.code], [401, 'TOTP_CODE_REUSED'])

    clock.advance(stepMs)
    const next = totpCodeAt(secret, clock.now())
    const [a, b] = await Promise.all([passwordLogin(service, email, password), passwordLogin(service, email, password)])
    const answers = await Promise.all([secondStep(service, a.challenge as string, 'totp', next), secondStep(service, b.challenge as string, 'totp', next)])
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 401], JSON.stringify(answers.map((answer) => answer.body)))
    assert.equal(answers.find((answer) => answer.status === 401)?.body.error.code, 'TOTP_CODE_REUSED')
  })

  it('codes one step either side are accepted; two steps away they are refused with SECOND_FACTOR_INVALID', async () => {
    const { email, password, secret } = await userWithTotp()
    const { challenge } = await passwordLogin(service, email, password)
    for (const offsetSteps of [-3, -2, 2, 3]) {
      const outside = await secondStep(service, challenge as string, 'totp', totpCodeAt(secret, clock.now() + offsetSteps * stepMs))
      assert.deepEqual([outside.status, outside.body.error.code], [401, 'SECOND_FACTOR_INVALID'], `${offsetSteps} steps away`)
      // A fresh account-level count for the next guess: the throttle is not what this test is about.
      await service.db.pool.query("UPDATE login_failures SET failures = 0 WHERE key LIKE 'second-factor:%'")
    }
    const late = await secondStep(service, challenge as string, 'totp', totpCodeAt(secret, clock.now() + stepMs))
    assert.equal(late.status, 200, 'the next step\'s code (a clock running fast) is accepted')
    // Past the step just spent (now + 1), so the previous step's code is a new one.
    clock.advance(3 * stepMs)
    const again = await passwordLogin(service, email, password)
    const early = await secondStep(service, again.challenge as string, 'totp', totpCodeAt(secret, clock.now() - stepMs))
    assert.equal(early.status, 200, 'the previous step\'s code (typed as it turned) is accepted')
  })

  it('a recovery code signs in once and only once; a wrong one is SECOND_FACTOR_INVALID', async () => {
    const { email, password, recoveryCodes } = await userWithTotp()
    assert.equal(recoveryCodes.length, 10)
    assert.equal(new Set(recoveryCodes).size, 10)
    const code = recoveryCodes[0] ?? ''
    const first = await passwordLogin(service, email, password)
    const used = await secondStep(service, first.challenge as string, 'recovery_code', code.toUpperCase().replaceAll('-', ' '))
    assert.equal(used.status, 200, 'any case, spaces for dashes')
    assert.deepEqual(decodeJwt(used.body.accessToken as string).amr, ['pwd', 'otp', 'mfa'])
    const again = await passwordLogin(service, email, password)
    const twice = await secondStep(service, again.challenge as string, 'recovery_code', code)
    assert.deepEqual([twice.status, twice.body.error.code], [401, 'SECOND_FACTOR_INVALID'])
    const other = await secondStep(service, again.challenge as string, 'recovery_code', recoveryCodes[1] ?? '')
    assert.equal(other.status, 200, 'the challenge survived the refused code; another code works')
    const factors = await request(service, 'GET', '/api/v1/me/factors', { token: other.body.accessToken as string })
    assert.equal(factors.body.items.find((item: { method: string }) => item.method === 'recovery_code').remaining, 8)
  })

  it('the challenge is single use and expires; a refused step writes nothing (challenge, code and sessions as before)', async () => {
    const { email, password, secret } = await userWithTotp()
    const { challenge } = await passwordLogin(service, email, password)
    const sessionsBefore = await service.db.pool.query('SELECT count(*)::int AS n FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email = $1', [email])
    const wrong = await secondStep(service, challenge as string, 'totp', totpCodeAt(secret, clock.now() + 5 * stepMs))
    assert.equal(wrong.status, 401)
    const sessionsAfter = await service.db.pool.query('SELECT count(*)::int AS n FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email = $1', [email])
    assert.equal(sessionsAfter.rows[0].n, sessionsBefore.rows[0].n, 'no session from a refused step')
    const code = totpCodeAt(secret, clock.now())
    assert.equal((await secondStep(service, challenge as string, 'totp', code)).status, 200)
    clock.advance(stepMs)
    const nextCode = totpCodeAt(secret, clock.now())
    const replayed = await secondStep(service, challenge as string, 'totp', nextCode)
    assert.deepEqual([replayed.status, replayed.body.error.code], [401, 'LOGIN_CHALLENGE_INVALID'])
    const fresh = await passwordLogin(service, email, password)
    assert.equal((await secondStep(service, fresh.challenge as string, 'totp', nextCode)).status, 200, 'the replay did not spend the code it carried')

    const late = await passwordLogin(service, email, password)
    clock.advance(301_000)
    const expired = await secondStep(service, late.challenge as string, 'totp', totpCodeAt(secret, clock.now()))
    assert.deepEqual([expired.status, expired.body.error.code], [401, 'LOGIN_CHALLENGE_INVALID'])
  })

  it('an account deleted while its second step completes: one waits for the other, neither fails', async () => {
    for (let i = 0; i < 3; i++) {
      const { email, password, secret, accessToken } = await userWithTotp()
      const { challenge } = await passwordLogin(service, email, password)
      const [deleted, step] = await Promise.all([
        request(service, 'DELETE', '/api/v1/me', { token: accessToken, body: { password } }),
        secondStep(service, challenge as string, 'totp', totpCodeAt(secret, clock.now())),
      ])
      assert.equal(deleted.status, 204)
      assert.ok([200, 401].includes(step.status), `the step after or before the deletion, never a fault: ${step.status} ${JSON.stringify(step.body)}`)
      const left = await service.db.pool.query('SELECT 1 FROM users WHERE email = $1', [email])
      assert.equal(left.rowCount, 0)
    }
  })

  it('second-factor guesses are throttled per account (429 with Retry-After, the right code too) and logged without the code', async () => {
    const { email, password, secret } = await userWithTotp()
    const { challenge } = await passwordLogin(service, email, password)
    const wrongCode = totpCodeAt(secret, clock.now() + 10 * stepMs)
    for (let i = 0; i < 3; i++) assert.equal((await secondStep(service, challenge as string, 'totp', wrongCode)).status, 401)
    const throttled = await secondStep(service, challenge as string, 'totp', totpCodeAt(secret, clock.now()))
    assert.deepEqual([throttled.status, throttled.body.error.code], [429, 'TOO_MANY_ATTEMPTS'])
    assert.ok(Number(throttled.headers.get('retry-after')) >= 1)
    const failed = lines.filter((line) => line.event === 'second_factor_failed' && line.method === 'totp')
    assert.ok(failed.length >= 3)
    assert.ok(lines.some((line) => line.event === 'second_factor_throttled'))
    assert.ok(!lines.some((line) => JSON.stringify(line).includes(wrongCode)), 'the code is never logged')
    clock.advance(61_000)
    const later = await secondStep(service, challenge as string, 'totp', totpCodeAt(secret, clock.now()))
    assert.equal(later.status, 200, 'the wait over, the right code signs in')
  })
})

describe('TOLLBOOTH_SECOND_FACTOR=required and off', () => {
  const clock = movableWallClock()
  let required: TestService
  before(async () => { required = await startTestService({ now: clock.now, config: { secondFactor: 'required' } }) })
  after(async () => { await required.close() })

  it('required: an account without a factor gets an enrolment challenge, enrols TOTP with it and signs in with the first code', async () => {
    const { email, password } = await registerUser(required)
    const first = await passwordLogin(required, email, password)
    assert.deepEqual([first.mfaRequired, first.enrolmentRequired, first.methods], [true, true, ['totp']])
    const refused = await secondStep(required, first.challenge as string, 'recovery_code', 'aaaa-bbbb-cccc')
    assert.equal(refused.body.error.code, 'SECOND_FACTOR_NOT_FOUND')
    const enrolment = await request(required, 'POST', '/api/v1/auth/login/totp', { body: { challenge: first.challenge } })
    assert.equal(enrolment.status, 201)
    assert.match(enrolment.body.uri as string, /^otpauth:\/\/totp\//)
    const { totpSecretFromBase32 } = await import('../../../src/accounts/factors/totp.js')
    const secret = totpSecretFromBase32(enrolment.body.secret as string)
    const done = await secondStep(required, first.challenge as string, 'totp', totpCodeAt(secret, clock.now()))
    assert.equal(done.status, 200, JSON.stringify(done.body))
    assert.equal((done.body.recoveryCodes as string[]).length, 10)
    assert.deepEqual(decodeJwt(done.body.accessToken as string).amr, ['pwd', 'otp', 'mfa'])
    const factors = await request(required, 'GET', '/api/v1/me/factors', { token: done.body.accessToken as string })
    assert.deepEqual(factors.body.items.map((item: { method: string, confirmed?: boolean }) => [item.method, item.confirmed]), [['totp', true], ['recovery_code', undefined]])
    clock.advance(stepMs)
    const next = await passwordLogin(required, email, password)
    assert.equal(next.enrolmentRequired, undefined, 'enrolled: a second-factor challenge from now on')
    const notForEnrolment = await request(required, 'POST', '/api/v1/auth/login/totp', { body: { challenge: next.challenge } })
    assert.deepEqual([notForEnrolment.status, notForEnrolment.body.error.code], [401, 'LOGIN_CHALLENGE_INVALID'])
  })

  it('off: no enrolment, and an account that has a factor signs in with its password alone', async () => {
    const { email, password, body } = await registerUser(required)
    const first = await passwordLogin(required, email, password)
    const enrolment = await request(required, 'POST', '/api/v1/auth/login/totp', { body: { challenge: first.challenge } })
    const { totpSecretFromBase32 } = await import('../../../src/accounts/factors/totp.js')
    const secret = totpSecretFromBase32(enrolment.body.secret as string)
    assert.equal((await secondStep(required, first.challenge as string, 'totp', totpCodeAt(secret, clock.now()))).status, 200)
    const off = await startTestService({ db: required.db, now: clock.now, config: { secondFactor: 'off' } })
    try {
      const signedIn = await passwordLogin(off, email, password)
      assert.deepEqual(decodeJwt(signedIn.accessToken as string).amr, ['pwd'])
      const refused = await request(off, 'POST', '/api/v1/me/factors/totp', { token: signedIn.accessToken as string })
      assert.deepEqual([refused.status, refused.body.error.code], [403, 'SECOND_FACTOR_DISABLED'])
      assert.ok(body.accessToken)
    } finally {
      await off.close()
    }
  })
})
