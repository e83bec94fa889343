import type { PasswordEngine } from '../../src/hashing/index.js'
import { parseTrustProxy } from '../../src/config/index.js'
import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, describe, it } from 'node:test'
import { readFailures, recordFailure } from '../../src/db/accounts/login-throttle.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { seedPolicy } from '../helpers/policies.js'
import { capturingLogger, registerUser, request, startTestService, uniqueEmail, type JsonResponse, type TestService, type TestServiceOptions } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/** A login; `from` another loopback address (a client of its own), else from 127.0.0.1. */
const login = async (service: TestService, email: string, password: string, headers: Record<string, string> = {}, from?: string): Promise<JsonResponse> =>
  await request(service, 'POST', '/api/v1/auth/login', { body: { email, password }, headers, ...(from === undefined ? {} : { from }) })

/** The service's wall clock, moved by hand: no test waits for a delay to pass. */
function manualClock (): { now: () => number, advance: (ms: number) => void } {
  let nowMs = Date.parse('2030-01-01T00:00:00Z')
  return { now: () => nowMs, advance: (ms) => { nowMs += ms } }
}

function assertThrottled (response: JsonResponse, retryAfterSeconds?: number): void {
  assert.equal(response.status, 429, JSON.stringify(response.body))
  assert.equal(response.body.error.code, 'TOO_MANY_ATTEMPTS')
  const header = Number(response.headers.get('retry-after'))
  assert.ok(Number.isInteger(header) && header >= 1, `Retry-After ${String(response.headers.get('retry-after'))}`)
  if (retryAfterSeconds !== undefined) assert.equal(header, retryAfterSeconds)
}

async function failTimes (service: TestService, email: string, times: number, headers: Record<string, string> = {}, from?: string): Promise<void> {
  for (let i = 0; i < times; i++) {
    const response = await login(service, email, `wrong password ${i}`, headers, from)
    assert.equal(response.status, 401, `failure ${i + 1}: ${JSON.stringify(response.body)}`)
  }
}

// Leased in PostgreSQL, as every process on a shared database does; and without leases, as the one process on the embedded database it started.
for (const soleProcessOnDatabase of [false, true]) {
  describe(`login throttling per account${soleProcessOnDatabase ? ', the only process on its database' : ''}`, () => {
    const clock = manualClock()
    let service: TestService
    const logs = capturingLogger()
    before(async () => { service = await startTestService({ now: clock.now, logger: logs.logger, soleProcessOnDatabase }) })
    after(async () => { await service.close() })

    it('answers 429 with Retry-After after 5 wrong passwords, to the right one too, without computing a hash', async () => {
      const { email, password } = await registerUser(service)
      await failTimes(service, email, 5)
      const before = service.engine.stats().completed
      const right = await login(service, email, password)
      assertThrottled(right, 1)
      const wrong = await login(service, email, 'yet another guess')
      assertThrottled(wrong, 1)
      assert.equal(service.engine.stats().completed, before, 'no hash was computed for a throttled login')
    })

    it('counts guesses sent at once: of 30 wrong passwords at the same moment, 5 cost a hash and 25 get 429', async () => {
      const { email } = await registerUser(service)
      const ghost = uniqueEmail('ghost-burst')
      for (const target of [email, ghost]) {
        const before = service.engine.stats().completed
        const answers = await Promise.all(Array.from({ length: 30 }, async (_, i) => await login(service, target, `burst guess ${i}`)))
        const statuses = answers.map((answer) => answer.status).sort()
        assert.deepEqual(statuses, [...Array(5).fill(401), ...Array(25).fill(429)], `${target === email ? 'known' : 'unknown'} account: ${statuses.join(' ')}`)
        assert.equal(service.engine.stats().completed - before, 5, 'a hash for each admitted guess only')
        assert.equal((await readFailures(service.db.pool, { account: target, address: '127.0.0.1' })).account?.failures, 5)
      }
    })

    it('lets the right password in from many clients at once: checks beyond the free failures wait their turn, none is refused', async () => {
      const { email, password } = await registerUser(service)
      const answers = await Promise.all(Array.from({ length: 20 }, async () => await login(service, email, password)))
      assert.deepEqual(answers.map((answer) => answer.status), Array(20).fill(200))
    })

    it('throttles an unknown email exactly as a known one: same status, body and headers', async () => {
      const { email } = await registerUser(service)
      const ghost = uniqueEmail('ghost')
      await failTimes(service, email, 5)
      await failTimes(service, ghost, 5)
      const known = await login(service, email, 'guess')
      const unknown = await login(service, ghost, 'guess')
      assertThrottled(known)
      assert.equal(unknown.status, known.status)
      assert.deepEqual(unknown.body, known.body)
      assert.deepEqual([...unknown.headers.keys()].sort(), [...known.headers.keys()].sort())
      assert.equal(unknown.headers.get('retry-after'), known.headers.get('retry-after'))
    })

    it('counts a login whose stored hash is refused as a failure, like a wrong password', async () => {
      const { email, password } = await registerUser(service)
      await service.db.pool.query('UPDATE users SET password_hash = $2 WHERE email = $1', [email.toLowerCase(), '$unknown$v=1$garbage'])
      logs.lines.length = 0
      for (let i = 0; i < 5; i++) assert.equal((await login(service, email, password)).status, 401)
      assertThrottled(await login(service, email, password))
      assert.deepEqual(logs.lines.filter((line) => line.event === 'login_failed').map((line) => line.reason), Array(5).fill('stored_hash_refused'))
    })

    it('counts an email whatever its case', async () => {
      const { email, password } = await registerUser(service)
      await failTimes(service, email.toUpperCase(), 5)
      assertThrottled(await login(service, email, password))
    })

    it('forgets the account\'s failures after a successful login', async () => {
      const { email, password } = await registerUser(service)
      await failTimes(service, email, 4)
      assert.equal((await login(service, email, password)).status, 200)
      // Without the reset these would be failures 5 to 8, and the next login a 429.
      await failTimes(service, email, 4)
      assert.equal((await login(service, email, password)).status, 200)
    })

    it('lifts the block as time passes, with a wait that doubles per further failure', async () => {
      const { email, password } = await registerUser(service)
      await failTimes(service, email, 5)
      assertThrottled(await login(service, email, password), 1)
      clock.advance(1000)
      await failTimes(service, email, 1)
      assertThrottled(await login(service, email, password), 2)
      clock.advance(1000)
      assertThrottled(await login(service, email, password), 1)
      clock.advance(1000)
      await failTimes(service, email, 1)
      assertThrottled(await login(service, email, password), 4)
      clock.advance(4000)
      assert.equal((await login(service, email, password)).status, 200)
    })

    it('starts a new count when the window is over', async () => {
      const { email, password } = await registerUser(service)
      await failTimes(service, email, 5)
      assertThrottled(await login(service, email, password))
      clock.advance(15 * 60 * 1000)
      // A fresh window: five free failures again.
      await failTimes(service, email, 5)
      assertThrottled(await login(service, email, password), 1)
    })

    it('logs failures and throttling as security events, with account and address, never the password', async () => {
      const { email, password } = await registerUser(service)
      const ghost = uniqueEmail('ghost')
      const secret = 'a very secret guess 81723'
      logs.lines.length = 0
      for (let i = 0; i < 5; i++) await login(service, email, secret)
      await login(service, ghost, secret)
      assertThrottled(await login(service, email, password))
      const failed = logs.lines.filter((line) => line.event === 'login_failed')
      assert.deepEqual(failed.map((line) => [line.account, line.reason, line.accountFailures]), [
        [email, 'wrong_password', 1], [email, 'wrong_password', 2], [email, 'wrong_password', 3], [email, 'wrong_password', 4], [email, 'wrong_password', 5],
        [ghost, 'unknown_email', 1],
      ])
      for (const line of failed) assert.equal(line.address, '127.0.0.1')
      const throttled = logs.lines.filter((line) => line.event === 'login_throttled')
      assert.equal(throttled.length, 1)
      assert.equal(throttled[0]?.account, email)
      assert.equal(throttled[0]?.address, '127.0.0.1')
      assert.deepEqual(throttled[0]?.scopes, ['account'])
      assert.equal(throttled[0]?.level, 40, 'a throttled login is logged as a warning')
      const everything = JSON.stringify(logs.lines)
      assert.ok(!everything.includes(secret), 'the wrong password is never logged')
      assert.ok(!everything.includes(password), 'nor the right one')
    })
  })
}

describe('login throttling per client address', () => {
  const clock = manualClock()
  const started: TestService[] = []
  const start = async (options: TestServiceOptions = {}): Promise<TestService> => {
    // An address bound of 20 here (100 by default), so the test stays short.
    const service = await startTestService({ now: clock.now, ...options, config: { loginThrottleAddressFailures: 20, ...options.config } })
    started.push(service)
    return service
  }
  after(async () => { for (const service of started) await service.close() })
  // One service for the tests without a trusted proxy: each test is a client of its own (its own
  // loopback address, 127.0.0.x), so no test's failures count against another's.
  const logs = capturingLogger()
  let direct: TestService
  before(async () => { direct = await start({ logger: logs.logger }) })

  it('lets one address fail on many accounts up to its bound, then throttles every login from it', async () => {
    const service = direct
    const from = '127.0.0.11'
    logs.lines.length = 0
    const { email, password } = await registerUser(service)
    // 5 accounts x 4 failures: 20 from one address, none of the accounts at its own bound.
    for (let i = 0; i < 4; i++) await failTimes(service, uniqueEmail('office'), 4, {}, from)
    await failTimes(service, uniqueEmail('office'), 3, {}, from)
    assert.equal((await login(service, email, password, {}, from)).status, 200, 'below the address bound (19 failures), logins go on')
    await failTimes(service, uniqueEmail('office'), 1, {}, from)
    const before = service.engine.stats().completed
    assertThrottled(await login(service, email, password, {}, from), 1)
    assert.equal(service.engine.stats().completed, before)
    const throttled = logs.lines.filter((line) => line.event === 'login_throttled')
    assert.deepEqual(throttled.map((line) => line.scopes), [['address']])
    assert.deepEqual(throttled.map((line) => line.address), [from])
    // The block is the address's: the same account from another address logs in.
    assert.equal((await login(service, email, password, {}, '127.0.0.12')).status, 200)
  })

  it('ignores X-Forwarded-For unless TOLLBOOTH_TRUST_PROXY is set', async () => {
    const service = direct
    const from = '127.0.0.13'
    for (let i = 0; i < 5; i++) await failTimes(service, uniqueEmail('spoof'), 4, { 'x-forwarded-for': `198.51.100.${i}` }, from)
    assertThrottled(await login(service, uniqueEmail('spoof'), 'guess', { 'x-forwarded-for': '198.51.100.200' }, from))
  })

  for (const setting of ['127.0.0.1', '1']) {
    it(`takes the client address from X-Forwarded-For when the proxy is trusted (TOLLBOOTH_TRUST_PROXY=${setting})`, async () => {
      const logs = capturingLogger()
      const service = await start({ config: { trustProxy: parseTrustProxy(setting) }, logger: logs.logger })
      const { email, password } = await registerUser(service)
      // 20 failures spread over 5 clients behind the proxy: each far below the address bound.
      for (let i = 0; i < 5; i++) await failTimes(service, uniqueEmail('proxied'), 4, { 'x-forwarded-for': `203.0.113.${i}` })
      assert.equal((await login(service, email, password, { 'x-forwarded-for': '203.0.113.1' })).status, 200)
      // A trusted proxy passes on whatever the client wrote there: what is no IP address is not stored with the session.
      assert.equal((await login(service, email, password, { 'x-forwarded-for': 'x'.repeat(200) })).status, 200)
      const { rows } = await service.db.pool.query<{ address: string | null }>(
        'SELECT s.address FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email = lower($1)', [email])
      assert.ok(rows.some((row) => row.address === '203.0.113.1'), 'the proxied client address is the session\'s')
      assert.ok(rows.some((row) => row.address === null), 'a forwarded value that is no address is not stored')
      assert.deepEqual(new Set(logs.lines.filter((line) => line.event === 'login_failed').map((line) => line.address)),
        new Set(['203.0.113.0', '203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4']))
      // One client past the bound is throttled; the others behind the same proxy are not.
      for (let i = 0; i < 5; i++) await failTimes(service, uniqueEmail('proxied'), 4, { 'x-forwarded-for': '203.0.113.9' })
      assertThrottled(await login(service, email, password, { 'x-forwarded-for': '203.0.113.9' }))
      assert.equal((await login(service, email, password, { 'x-forwarded-for': '203.0.113.1' })).status, 200)
    })
  }

  it('does not reset the address on a success: a login of the attacker\'s own account does not buy more guesses', async () => {
    const service = direct
    const from = '127.0.0.14'
    const own = await registerUser(service)
    for (let i = 0; i < 5; i++) {
      await failTimes(service, uniqueEmail('victim'), 4, {}, from)
      if (i < 4) assert.equal((await login(service, own.email, own.password, {}, from)).status, 200)
    }
    assertThrottled(await login(service, own.email, own.password, {}, from))
  })
})

describe('login throttling state in PostgreSQL', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })

  it('keeps the counts across a restart on the same database', async () => {
    const clock = manualClock()
    const first = await startTestService({ db, now: clock.now })
    const { email, password } = await registerUser(first)
    await failTimes(first, email, 5)
    await first.close()
    const second = await startTestService({ db, now: clock.now })
    try {
      assertThrottled(await login(second, email, password), 1)
    } finally {
      await second.close()
    }
  })

  it('counts concurrent failures exactly, for both keys, in one statement each', async () => {
    const nowMs = Date.parse('2030-06-01T00:00:00Z')
    const keys = { account: 'concurrent@example.com', address: '192.0.2.10' }
    await Promise.all(Array.from({ length: 25 }, async () => await recordFailure(db.pool, keys, { nowMs, windowExpiredAtOrBefore: nowMs - 900_000 })))
    const counts = await readFailures(db.pool, keys)
    assert.equal(counts.account?.failures, 25)
    assert.equal(counts.address?.failures, 25)
    // A failure after the window restarts the row in place.
    const later = nowMs + 900_000
    const restarted = await recordFailure(db.pool, keys, { nowMs: later, windowExpiredAtOrBefore: later - 900_000 })
    assert.deepEqual(restarted.account, { failures: 1, windowStartedAt: later, lastFailureAt: later })
  })
})

/** A login sent with node:http, to hang up on at will. */
function sendLogin (url: string, email: string, password: string): http.ClientRequest {
  const body = JSON.stringify({ email, password })
  const req = http.request(`${url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } })
  req.on('error', () => {})
  req.end(body)
  return req
}

/**
 * Resolves when the engine's next verify (or dummy verify) has been handed to a thread: a free
 * thread takes a task as it is submitted, so it runs by the time the call returns. An event, not
 * a poll: a poll of the pool's running count could miss a verify that started and ended between
 * two looks on a busy machine.
 */
async function firstVerifyRunning (engine: PasswordEngine): Promise<void> {
  const verify = engine.verify.bind(engine)
  const verifyDummy = engine.verifyDummy.bind(engine)
  const restore = (): void => { engine.verify = verify; engine.verifyDummy = verifyDummy }
  await new Promise<void>((resolve) => {
    engine.verify = async (...args) => {
      const running = verify(...args)
      restore()
      assert.equal(engine.stats().running, 1, 'the verify has its thread')
      resolve()
      return await running
    }
    engine.verifyDummy = async (...args) => {
      const running = verifyDummy(...args)
      restore()
      assert.equal(engine.stats().running, 1, 'the dummy verify has its thread')
      resolve()
      return await running
    }
  })
}

describe('a client that hangs up while its password is checked', () => {
  let service: TestService
  // bcrypt cost 10: tens of ms a verify, time enough to hang up while one runs.
  before(async () => { service = await startTestService({ policy: seedPolicy, threads: 1 }) })
  after(async () => { await service.close() })

  /** Sends a login and hangs up as soon as its first verify runs; resolves once both forms' verifies are done. */
  async function hangUpMidCheck (email: string, password: string): Promise<void> {
    const before = service.engine.stats()
    const req = sendLogin(service.url, email, password)
    await firstVerifyRunning(service.engine)
    req.destroy()
    await waitFor('both verifies done', () => service.engine.stats().completed - before.completed === 2)
    assert.equal(service.engine.stats().cancelled - before.cancelled, 0, 'no verify was cancelled once one ran')
  }

  it('is still counted when the service shuts down meanwhile: the close waits for the check to write its failure', async () => {
    // bcrypt cost 11: a verify of over 100 ms (seconds on a loaded machine), far longer
    // than the close takes on its own; a deadline long enough that the verify always starts.
    const db = await createTestDatabase()
    const slow = await startTestService({ db, policy: { ...seedPolicy, bcrypt: { cost: 11 } }, threads: 1, config: { loginDeadlineMs: 20_000 } })
    const ghost = uniqueEmail('ghost-at-shutdown')
    try {
      const req = sendLogin(slow.url, ghost, 'a guess before the shutdown')
      await firstVerifyRunning(slow.engine)
      req.destroy()
      await slow.app.close()
      assert.equal((await readFailures(db.pool, { account: ghost, address: '127.0.0.1' })).account?.failures, 1, 'written before the close returned')
    } finally {
      await slow.close()
      await db.drop()
    }
  })

  it('is still counted, for a known and an unknown email, when the password has two forms (a decomposed é)', async () => {
    const { email } = await registerUser(service)
    const ghost = uniqueEmail('ghost-hangs-up')
    // Not in NFC: checked as its NFC form, then as typed. Hanging up during the second verify,
    // once the first one's answer time had shown no match, used to skip the count.
    const guess = 'guess cafe\u0301 au lait'
    for (const target of [email, ghost]) {
      await hangUpMidCheck(target, guess)
      await waitFor('the failure written', async () => (await readFailures(service.db.pool, { account: target, address: '127.0.0.1' })).account?.failures === 1)
    }
  })
})
