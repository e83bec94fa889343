/**
 * Throttling that cannot be turned on the owner: a client that signed in to the account before
 * presents its device token and is judged by its own failures; any other client meets the
 * account's bound, whose delays run out on their own. And the bound on an account's checks under
 * way holds across processes.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { capturingLogger, registerUser, request, startTestService, uniqueEmail, type JsonResponse, type TestService } from '../../helpers/service.js'
import { waitFor } from '../../helpers/wait.js'

/** The service's wall clock, moved by hand: a minute passes without waiting for it. */
function manualClock (): { now: () => number, advance: (ms: number) => void } {
  let nowMs = Date.parse('2030-01-01T00:00:00Z')
  return { now: () => nowMs, advance: (ms) => { nowMs += ms } }
}

const login = async (service: TestService, email: string, password: string, options: { device?: string, from?: string } = {}): Promise<JsonResponse> =>
  await request(service, 'POST', '/api/v1/auth/login', {
    body: { email, password },
    headers: options.device === undefined ? {} : { 'tollbooth-device': options.device },
    ...(options.from === undefined ? {} : { from: options.from }),
  })

/** The device token a sign-in handed its client. */
function deviceOf (response: JsonResponse): string {
  const token = response.headers.get('tollbooth-device')
  assert.ok(token !== null && /^[A-Za-z0-9_-]{43}$/.test(token), `a device token in ${JSON.stringify([...response.headers])}`)
  return token
}

describe('known devices', () => {
  const clock = manualClock()
  const logs = capturingLogger()
  let service: TestService
  before(async () => { service = await startTestService({ now: clock.now, logger: logs.logger }) })
  after(async () => { await service.close() })

  it('hands a signed-in client its device token as an HttpOnly, SameSite=Strict, Secure cookie scoped to the API, and as a header', async () => {
    const registered = await registerUser(service)
    const signedIn = await login(service, registered.email, registered.password)
    assert.equal(signedIn.status, 200)
    const token = deviceOf(signedIn)
    const cookie = signedIn.headers.get('set-cookie') ?? ''
    assert.match(cookie, new RegExp(`^tollbooth_device=${token}; `))
    for (const attribute of ['Path=/api/v1', 'HttpOnly', 'SameSite=Strict', 'Secure', `Max-Age=${365 * 86_400}`]) assert.ok(cookie.split('; ').includes(attribute), `${attribute} in ${cookie}`)
    assert.equal(JSON.stringify(signedIn.body).includes(token), false, 'never in the body')
    // Presented again (as the cookie a browser sends back), it is kept, not replaced.
    const again = await request(service, 'POST', '/api/v1/auth/login', { body: { email: registered.email, password: registered.password }, headers: { cookie: `other=1; tollbooth_device=${token}` } })
    assert.equal(again.status, 200)
    assert.equal(deviceOf(again), token)
  })

  it('the lockout attack: wrong passwords from another client every minute never keep the owner\'s known client out', async () => {
    const owner = await registerUser(service)
    const device = deviceOf((await login(service, owner.email, owner.password, { from: '127.0.0.31' })))
    const before = logs.lines.length
    // The attacker, from an address of its own, with no device of the account: its fifth wrong
    // password throttles the account for unknown clients, a security event.
    for (let guess = 0; guess < 5; guess++) assert.equal((await login(service, owner.email, `guess ${guess}`, { from: '127.0.0.32' })).status, 401)
    assert.ok(logs.lines.slice(before).some((line) => line.event === 'account_throttled' && line.account === owner.email.toLowerCase()), 'the throttling logged')
    assert.equal((await login(service, owner.email, owner.password, { from: '127.0.0.33' })).status, 429, 'an unknown client of the owner meets the account\'s delay')
    // For an hour the attacker comes back each minute, as soon as its delay allows or not at all;
    // the owner signs in from the known client, with the right password, every time.
    for (let minute = 0; minute < 60; minute++) {
      clock.advance(60_000)
      const guess = await login(service, owner.email, `guess at minute ${minute}`, { from: '127.0.0.32' })
      assert.ok(guess.status === 401 || guess.status === 429, `the attacker answered ${guess.status}: ${JSON.stringify(guess.body)}`)
      const signedIn = await login(service, owner.email, owner.password, { device, from: '127.0.0.31' })
      assert.equal(signedIn.status, 200, `minute ${minute}: ${JSON.stringify(signedIn.body)}`)
    }
    // The owner is told by mail, once however often the throttling began again (at most once an hour).
    await Promise.all([...service.app.auth.backgroundJobs])
    const { rows } = await service.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM mail_outbox WHERE kind = 'logins_throttled' AND recipient = $1", [owner.email.toLowerCase()])
    assert.equal(rows[0]?.n, 1, 'one mail to the owner')
    const throttlings = logs.lines.slice(before).filter((line) => line.event === 'account_throttled' && line.account === owner.email.toLowerCase()).length
    assert.ok(throttlings >= 2, `the throttling began ${throttlings} times in the hour (a window is 15 minutes)`)
    assert.equal(logs.lines.slice(before).filter((line) => line.event === 'owner_alerted').length, 1)
  })

  it('judges a known device by its own failures: they delay it, not the account, and a success forgets them', async () => {
    const owner = await registerUser(service)
    const device = deviceOf(await login(service, owner.email, owner.password))
    for (let guess = 0; guess < 10; guess++) assert.equal((await login(service, owner.email, `typo ${guess}`, { device })).status, 401)
    const delayed = await login(service, owner.email, owner.password, { device })
    assert.equal(delayed.status, 429, 'past its own ten free failures the device waits')
    assert.equal((await login(service, owner.email, owner.password)).status, 200, 'the account itself was not throttled by them')
    clock.advance(1000)
    assert.equal((await login(service, owner.email, owner.password, { device })).status, 200, 'its delay over, the right password')
    assert.equal((await login(service, owner.email, 'one more typo', { device })).status, 401, 'its failures forgotten: a typo is a plain 401 again')
  })

  it('does not take another account\'s device, nor a malformed token, for a known device', async () => {
    const owner = await registerUser(service)
    const stranger = await registerUser(service)
    const strangersDevice = deviceOf(await login(service, stranger.email, stranger.password))
    for (let guess = 0; guess < 5; guess++) assert.equal((await login(service, owner.email, `guess ${guess}`, { device: strangersDevice })).status, 401)
    assert.equal((await login(service, owner.email, owner.password, { device: strangersDevice })).status, 429, 'judged as an unknown client of this account')
    assert.equal((await login(service, owner.email, owner.password, { device: 'not-a-token' })).status, 429)
  })
})

describe('an account\'s checks under way, across processes', () => {
  let first: TestService
  let second: TestService
  before(async () => {
    // Two services on one database, as two replicas.
    first = await startTestService({ threads: 1, config: { loginDeadlineMs: 60_000 } })
    second = await startTestService({ threads: 1, db: first.db, config: { loginDeadlineMs: 60_000 } })
  })
  after(async () => {
    await second.close()
    await first.close()
  })

  /**
   * Holds every verify (and dummy verify) of both replicas before it reaches the pool until
   * `open()`: the checks that won their room stay under way, whatever the machine's speed.
   */
  function holdVerifies (): { held: () => number, open: () => void, restore: () => void } {
    let opened: () => void = () => {}
    const gate = new Promise<void>((resolve) => { opened = resolve })
    let held = 0
    const restores = [first, second].map(({ engine }) => {
      const verify = engine.verify.bind(engine)
      const verifyDummy = engine.verifyDummy.bind(engine)
      engine.verify = async (...args) => { held++; await gate; return await verify(...args) }
      engine.verifyDummy = async (...args) => { held++; await gate; await verifyDummy(...args) }
      return () => { engine.verify = verify; engine.verifyDummy = verifyDummy }
    })
    return { held: () => held, open: opened, restore: () => { for (const restore of restores) restore() } }
  }

  /** Five guesses to each replica at once (each would let five through on its own); their statuses, and the verifies they cost. */
  async function guessOnBoth (email: string): Promise<{ statuses: number[], verifies: number, bodies: unknown[] }> {
    const verifies = holdVerifies()
    try {
      const answers = Promise.all(Array.from({ length: 10 }, async (_, i) => await login(i % 2 === 0 ? first : second, email, `burst guess ${i}`)))
      await waitFor('five checks under way', () => verifies.held() >= 5)
      // The five others found the account's room taken, on their replica or on the other: they read
      // again now and then, and never reach a verify while the five are under way.
      const { rows } = await first.db.pool.query<{ checks: string[] }>("SELECT checks FROM login_failures WHERE scope = 'account' AND key = $1", [email])
      assert.equal(rows[0]?.checks.length, 5, 'five leases held in PostgreSQL')
      verifies.open()
      const done = await answers
      return { statuses: done.map((answer) => answer.status).sort(), verifies: verifies.held(), bodies: done.map((answer) => answer.body) }
    } finally {
      verifies.restore()
    }
  }

  it('bounds guesses sent to both at once as guesses sent to one: five cost a verify, the rest get 429', async () => {
    const account = await registerUser(first)
    const email = account.email.toLowerCase()
    const { statuses, verifies, bodies } = await guessOnBoth(email)
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429, 429, 429], JSON.stringify(bodies))
    assert.equal(verifies, 5, 'five verifies over both replicas')
    const { rows } = await first.db.pool.query<{ checks: string[] }>("SELECT checks FROM login_failures WHERE scope = 'account' AND key = $1", [email])
    assert.deepEqual(rows[0]?.checks, [], 'every lease given back')
  })

  it('an unknown email is bounded the same way', async () => {
    const { statuses, verifies, bodies } = await guessOnBoth(uniqueEmail('ghost-replicas'))
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429, 429, 429], JSON.stringify(bodies))
    assert.equal(verifies, 5)
  })
})
