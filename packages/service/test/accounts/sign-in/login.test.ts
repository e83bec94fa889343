import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { cheapPolicy, registerUser, request, startTestService, uniqueEmail, type TestService } from '../../helpers/service.js'

describe('POST /api/v1/auth/login', () => {
  let service: TestService
  before(async () => { service = await startTestService() })
  after(async () => { await service.close() })

  it('signs in with the right password, whatever the email case and surrounding spaces', async () => {
    const { email, password, body: registered } = await registerUser(service)
    const response = await request(service, 'POST', '/api/v1/auth/login', { body: { email: `  ${email.toUpperCase()} `, password } })
    assert.equal(response.status, 200)
    assert.equal(response.body.user.id, registered.user.id)
    assert.notEqual(response.body.refreshToken, registered.refreshToken)
    const me = await request(service, 'GET', '/api/v1/me', { token: response.body.accessToken })
    assert.equal(me.status, 200)
    assert.equal(me.body.email, email.toLowerCase())
  })

  it('answers the same 401 for a wrong password and an unknown email', async () => {
    const { email } = await registerUser(service)
    const wrong = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: 'not the password' } })
    const unknown = await request(service, 'POST', '/api/v1/auth/login', { body: { email: uniqueEmail('ghost'), password: 'not the password' } })
    assert.equal(wrong.status, 401)
    assert.equal(unknown.status, 401)
    assert.deepEqual(wrong.body, unknown.body)
    assert.equal(wrong.body.error.code, 'AUTH_INVALID_CREDENTIALS')
    assert.deepEqual([...wrong.headers.keys()].sort(), [...unknown.headers.keys()].sort())
  })

  it('spends exactly one verify on an unknown email, as on a known one', async () => {
    const { email } = await registerUser(service)
    const before = service.engine.stats().completed
    await request(service, 'POST', '/api/v1/auth/login', { body: { email: uniqueEmail('nobody'), password: 'whatever123' } })
    const afterUnknown = service.engine.stats().completed
    await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: 'whatever123' } })
    const afterKnown = service.engine.stats().completed
    assert.equal(afterUnknown - before, 1)
    assert.equal(afterKnown - afterUnknown, 1)
  })

  it('takes about as long for an unknown email as for a wrong password', async () => {
    // A real-strength hash (bcrypt cost 9, ~25 ms) so that skipping it would show.
    // Throttling off in effect: 15 wrong passwords on one account must all reach the hash.
    const slow = await startTestService({ policy: { ...cheapPolicy, algorithm: 'bcrypt', bcrypt: { cost: 9 } }, threads: 1, config: { loginThrottleAccountFailures: 1000 } })
    after(async () => { await slow.close() })
    const { email } = await registerUser(slow)
    const timeOf = async (loginEmail: string): Promise<number> => {
      const started = performance.now()
      await request(slow, 'POST', '/api/v1/auth/login', { body: { email: loginEmail, password: 'wrong password 1' } })
      return performance.now() - started
    }
    const known: number[] = []
    const unknown: number[] = []
    for (let i = 0; i < 15; i++) {
      known.push(await timeOf(email))
      unknown.push(await timeOf(uniqueEmail('timing')))
    }
    // Each one's fastest answer: a busy machine only adds to an answer, so the fastest of fifteen is
    // the work itself (the hash and the round trips), where a median can still carry a preempted one.
    // Generous: the point is that the unknown email is not answered without a hash (which would be many times faster).
    const ratio = Math.min(...unknown) / Math.min(...known)
    assert.ok(ratio > 0.6 && ratio < 1.6, `fastest unknown/known time ratio ${ratio.toFixed(2)} (unknown ${unknown.map((ms) => ms.toFixed(0)).join(' ')} ms; known ${known.map((ms) => ms.toFixed(0)).join(' ')} ms)`)
  })

  it('rejects invalid bodies with 400 and no hash', async () => {
    const before = service.engine.stats().completed
    for (const body of [{}, { email: 'a@b.co' }, { email: 'nope', password: 'x' }, { email: 'a@b.co', password: '' }, { email: 'a@b.co', password: 'x', extra: 1 }]) {
      const response = await request(service, 'POST', '/api/v1/auth/login', { body })
      assert.equal(response.status, 400, JSON.stringify(body))
      assert.equal(response.body.error.code, 'VALIDATION_FAILED')
    }
    assert.equal(service.engine.stats().completed, before)
  })
})
