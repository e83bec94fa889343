/**
 * A passkey sign-in and a TOTP second step cost no password hash: they never wait behind the hash
 * pool, whatever its queue holds, and past the in-flight cap they are shed like every cheap route.
 */
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { after, before, describe, it } from 'node:test'
import { totpCodeAt } from '../../src/accounts/factors/totp.js'
import { holdQueries } from '../helpers/database.js'
import { addPasskey, newAuthenticator, testPasskeyConfig } from '../helpers/factors/passkeys.js'
import { slowBcryptHash } from '../helpers/policies.js'
import { enrolTotp, movableWallClock, passwordLogin, stepMs } from '../helpers/factors/second-factor.js'
import { registerUser, request, startTestService, type JsonResponse, type TestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

interface Timed { response: JsonResponse, ms: number, answeredAt: number }

async function timed (send: () => Promise<JsonResponse>): Promise<Timed> {
  const sent = performance.now()
  const response = await send()
  const answeredAt = performance.now()
  return { response, ms: answeredAt - sent, answeredAt }
}

/** A passkey sign-in as a page makes it: fresh options, then the assertion; both timed as one. */
async function passkeySignIn (service: TestService, authenticator: ReturnType<typeof newAuthenticator>, from: string): Promise<Timed & { options: JsonResponse }> {
  let options: JsonResponse | undefined
  const signIn = await timed(async () => {
    options = await request(service, 'POST', '/api/v1/auth/passkey/options', { from })
    return await request(service, 'POST', '/api/v1/auth/passkey/verify', { from, body: { response: authenticator.getAssertion(options.body) } })
  })
  assert.ok(options !== undefined)
  return { ...signIn, options }
}

const queueLength = 4
const passwordLogins = 12

describe('a passkey sign-in and a TOTP second step while password logins saturate the hash pool', () => {
  const clock = movableWallClock()
  let service: TestService
  // One hash thread at the event loop's priority (a nice thread beside busy loops gets a sliver of a
  // core and the blocker outlives any deadline), a short queue, a deadline long enough that logins
  // queue rather than miss it however long the blocker takes.
  before(async () => { service = await startTestService({ threads: 1, threadNice: 0, maxQueue: queueLength, now: clock.now, config: { ...testPasskeyConfig, loginDeadlineMs: 600_000 } }) })
  after(async () => { await service.close() })

  it('are answered at once, before any queued password login, from an address whose logins are refused', async () => {
    // Made while the pool is free: a passkey account, a TOTP account's challenge from its password, a password account.
    const authenticator = newAuthenticator()
    const passkeyUser = await registerUser(service)
    assert.equal((await addPasskey(service, passkeyUser.body.accessToken as string, authenticator)).status, 201)
    const totpUser = await registerUser(service)
    const { secret } = await enrolTotp(service, totpUser.body.accessToken as string, clock.now)
    clock.advance(stepMs)
    const { challenge } = await passwordLogin(service, totpUser.email, totpUser.password)
    // One account a login: a check waiting for its account's other checks gives its queue place
    // back, so logins of one account would let later ones in at the door instead of refusing them.
    // Registered one after another: the queue of four would refuse a dozen registrations at once.
    const accounts: Array<Awaited<ReturnType<typeof registerUser>>> = []
    for (let i = 0; i < passwordLogins; i++) accounts.push(await registerUser(service))

    const stats = (): ReturnType<TestService['engine']['stats']> => service.engine.stats()
    const before = stats()
    // The only thread held by a verify of cost 16, the bound (seconds, more on a loaded machine;
    // made in a millisecond): the queue cannot move meanwhile. Filling it takes tens of
    // milliseconds, quiet or beside two busy loops.
    const blocker = service.engine.verify('blocker', slowBcryptHash(16))
    await waitFor('the blocker running', () => stats().running === 1, { intervalMs: 1 })
    // Password logins, each from an address of its own (no client is paced by another's refusal):
    // the queue fills, the others are refused at the door.
    const logins = accounts.map(async ({ email, password }, i) => await timed(async () => await request(service, 'POST', '/api/v1/auth/login', { body: { email, password }, from: `127.0.0.${20 + i}` })))
    await waitFor('the queue full and logins refused', () => (stats().queued >= queueLength && stats().rejected > before.rejected) || stats().completed > before.completed, { intervalMs: 1, timeoutMs: 120_000 })
    assert.equal(stats().completed, before.completed, 'the blocker still held the thread when the queue filled')
    const saturated = stats()

    // From the address of a refused login (the last ones sent are refused): the pacer holds its logins, not these.
    const from = `127.0.0.${20 + passwordLogins - 1}`
    const passkey = await passkeySignIn(service, authenticator, from)
    const totp = await timed(async () => await request(service, 'POST', '/api/v1/auth/login/second-factor', { from, body: { challenge, method: 'totp', code: totpCodeAt(secret, clock.now()) } }))
    const during = stats()

    assert.equal(passkey.options.status, 200, JSON.stringify(passkey.options.body))
    assert.equal(passkey.response.status, 200, JSON.stringify(passkey.response.body))
    assert.equal(typeof passkey.response.body.accessToken, 'string')
    assert.equal(totp.response.status, 200, JSON.stringify(totp.response.body))
    assert.equal(typeof totp.response.body.accessToken, 'string')
    assert.equal(during.completed, before.completed, 'both answered while no hash ended: the blocker still ran')
    assert.ok(during.running === 1 && during.queued >= saturated.queued, `and every admitted login still waited (${during.queued} queued, ${saturated.queued} before)`)

    assert.equal((await blocker).match, false)
    const answered = await Promise.all(logins)
    const served = answered.filter((login) => login.response.status === 200)
    const refused = answered.filter((login) => login.response.status === 503)
    assert.equal(served.length + refused.length, passwordLogins, `statuses: ${answered.map((login) => login.response.status).join(',')}`)
    assert.ok(served.length >= queueLength, `${served.length} logins queued and served`)
    assert.ok(refused.length >= 1, 'and the others refused')
    for (const { response } of refused) {
      assert.ok(['SERVICE_OVERLOADED', 'HASH_QUEUE_FULL'].includes(response.body.error.code as string), response.body.error.code as string)
      assert.ok(Number(response.headers.get('retry-after')) >= 1)
    }
    const firstServedAt = Math.min(...served.map((login) => login.answeredAt))
    const fastestServedMs = Math.min(...served.map((login) => login.ms))
    for (const [what, cheap] of [['the passkey sign-in', passkey], ['the TOTP step', totp]] as const) {
      assert.ok(cheap.answeredAt < firstServedAt, `${what} was answered before the first password login that waited for a hash`)
      assert.ok(cheap.ms < fastestServedMs, `${what} took ${cheap.ms.toFixed(0)} ms; the fastest served password login ${fastestServedMs.toFixed(0)} ms`)
    }
  })
})

describe('a passkey sign-in and a TOTP second step at the in-flight cap', () => {
  const cap = 2
  let service: TestService
  before(async () => { service = await startTestService({ config: { ...testPasskeyConfig, maxInFlight: cap, maxEventLoopDelayMs: 0 } }) })
  after(async () => { await service.close() })

  it('are refused 503 SERVICE_OVERLOADED with Retry-After, as every capped route, and served once there is room', async () => {
    const authenticator = newAuthenticator()
    const user = await registerUser(service)
    const token = user.body.accessToken as string
    assert.equal((await addPasskey(service, token, authenticator)).status, 201)
    const options = await request(service, 'POST', '/api/v1/auth/passkey/options')
    assert.equal(options.status, 200)
    // The cap filled by GET /me requests held at their user lookup.
    const lookups = holdQueries(service.db.pool, /FROM users WHERE id = \$1/, cap)
    let held: Array<Promise<JsonResponse>> = []
    try {
      held = Array.from({ length: cap }, async () => await request(service, 'GET', '/api/v1/me', { token }))
      await lookups.held
      const refusals = [
        await request(service, 'POST', '/api/v1/auth/passkey/options'),
        await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: authenticator.getAssertion(options.body) } }),
        await request(service, 'POST', '/api/v1/auth/login/second-factor', { body: { challenge: 'a challenge', method: 'totp', code: '123456' } }),
      ]
      for (const refused of refusals) {
        assert.equal(refused.status, 503, JSON.stringify(refused.body))
        assert.equal(refused.body.error.code, 'SERVICE_OVERLOADED')
        assert.ok(Number(refused.headers.get('retry-after')) >= 1)
      }
    } finally {
      lookups.release()
    }
    for (const response of await Promise.all(held)) assert.equal(response.status, 200)
    const again = await request(service, 'POST', '/api/v1/auth/passkey/options')
    assert.equal(again.status, 200)
    const signedIn = await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: authenticator.getAssertion(again.body) } })
    assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body))
  })
})
