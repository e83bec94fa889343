import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import net from 'node:net'
import { performance } from 'node:perf_hooks'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { loadConfig } from '../../src/config/index.js'
import { isConnectionFailure } from '../../src/db/errors.js'
import { ThrottledFaultLog } from '../../src/db/fault-log.js'
import { createDatabasePool, defaultAcquireTimeoutMs, withTransaction, type DatabasePool, type DatabasePoolOptions } from '../../src/db/pool.js'
import { toTollboothError } from '../../src/http/error-handler.js'
import { createAccessTokens } from '../../src/accounts/tokens.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { capturingLogger, registerUser, request, startTestService, testJwtSecret, uniqueEmail, type JsonResponse, type TestService } from '../helpers/service.js'
import { startTcpProxy, type TcpProxy } from '../helpers/net/tcp-proxy.js'
import { waitFor } from '../helpers/wait.js'

/** Driver and socket wording that must never reach a client. */
const driverText = /ECONN|EPIPE|terminated|timeout exceeded|connect |not queryable|127\.0\.0\.1/i

function assertAnswered503 (response: JsonResponse, code: 'DATABASE_UNAVAILABLE' | 'SERVICE_OVERLOADED', what: string): void {
  assert.equal(response.status, 503, `${what}: ${response.status} ${JSON.stringify(response.body)}`)
  assert.equal(response.body.error.code, code, what)
  const retryAfter = Number(response.headers.get('retry-after'))
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 5, `${what}: Retry-After ${String(response.headers.get('retry-after'))}`)
  assert.doesNotMatch(JSON.stringify(response.body), driverText, `${what}: no driver text in the answer`)
}

/** A service whose pool (ours, so the test can shape it) reaches the database at `url`. */
async function serviceOn (database: TestDatabase, url: string, size: number, options: DatabasePoolOptions): Promise<{ service: TestService, pool: DatabasePool, close: () => Promise<void> }> {
  const pool = createDatabasePool(url, size, options)
  // HS256: a test below signs its own token with the shared secret.
  const service = await startTestService({ db: { url, pool, drop: async () => {} }, config: { jwtAlgorithm: 'HS256' } })
  return {
    service,
    pool,
    async close () {
      await service.close()
      await pool.end()
    },
  }
}

/** Backends of the service (application_name tollbooth) waiting on a lock in `admin`'s database. */
async function lockWaiters (admin: pg.Client): Promise<number> {
  // Inside a transaction PostgreSQL serves the activity view from one snapshot; take a fresh one.
  await admin.query('SELECT pg_stat_clear_snapshot()')
  const { rows } = await admin.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tollbooth' AND wait_event_type = 'Lock'")
  return rows[0]?.n ?? 0
}

describe('PostgreSQL out of reach (a real socket fault through a TCP proxy)', () => {
  let database: TestDatabase
  let proxy: TcpProxy
  let running: Awaited<ReturnType<typeof serviceOn>>
  let service: TestService
  const faultLog = capturingLogger('warn')

  before(async () => {
    database = await createTestDatabase()
    proxy = await startTcpProxy(database.url)
    running = await serviceOn(database, proxy.proxied(database.url), 4, { log: faultLog.logger })
    service = running.service
  })
  after(async () => {
    await running.close()
    await proxy.close()
    await database.drop()
  })

  it('answers 503 DATABASE_UNAVAILABLE with Retry-After (never 500), /readyz 503 without driver text, /healthz 200; and recovers without a restart', async (t) => {
    const account = await registerUser(service)
    const token = account.body.accessToken as string
    const refreshToken = account.body.refreshToken as string
    assert.equal((await request(service, 'POST', '/api/v1/posts', { token, body: { title: 'before', body: 'the outage' } })).status, 201)
    assert.equal((await request(service, 'GET', '/readyz')).status, 200)
    assert.ok(running.pool.totalCount > 0, 'the pool holds connections through the proxy')

    const linesBefore = faultLog.lines.length
    const outageStartedAt = performance.now()
    await proxy.stop()
    const calls: Array<[string, () => Promise<JsonResponse>]> = [
      ['login', async () => await request(service, 'POST', '/api/v1/auth/login', { body: { email: account.email, password: account.password } })],
      ['register', async () => await request(service, 'POST', '/api/v1/auth/register', { body: { email: uniqueEmail('outage'), password: 'a new password' } })],
      ['me', async () => await request(service, 'GET', '/api/v1/me', { token })],
      ['create a post', async () => await request(service, 'POST', '/api/v1/posts', { token, body: { title: 'during', body: 'the outage' } })],
      ['list posts', async () => await request(service, 'GET', '/api/v1/posts')],
      ['refresh', async () => await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken } })],
    ]
    // Twice: the first round may meet connections the pool has not yet seen die, the second an empty pool and refused connects.
    for (const round of [1, 2]) {
      for (const [what, call] of calls) assertAnswered503(await call(), 'DATABASE_UNAVAILABLE', `${what} (round ${round})`)
    }
    const ready = await request(service, 'GET', '/readyz')
    assert.equal(ready.status, 503)
    assert.equal(ready.body.error.code, 'NOT_READY')
    assert.equal(ready.body.error.message, 'database unavailable')
    const live = await request(service, 'GET', '/healthz')
    assert.equal(live.status, 200)

    // A crowd during the outage is logged as a few lines with counts, not a line per request.
    const burstStartedAt = performance.now()
    const burst = await Promise.all(Array.from({ length: 200 }, async () => await request(service, 'GET', '/api/v1/me', { token })))
    const burstMs = performance.now() - burstStartedAt
    assert.ok(burst.every((response) => response.status === 503 && response.body.error.code === 'DATABASE_UNAVAILABLE'))
    const outageSeconds = (performance.now() - outageStartedAt) / 1000
    const faultLines = faultLog.lines.slice(linesBefore)
    t.diagnostic(`200 concurrent requests during the outage: all 503 within ${burstMs.toFixed(0)} ms; ${faultLines.length} log line(s) for ${calls.length * 2 + 201} failed requests in ${outageSeconds.toFixed(2)} s`)
    // Each kind of fault (lost, failed, given up) at most once at once, then once a second.
    assert.ok(faultLines.length <= 3 * (Math.ceil(outageSeconds) + 1), `${faultLines.length} log lines in ${outageSeconds.toFixed(2)} s`)
    assert.ok(faultLines.length > 0, 'the faults are logged')
    assert.ok(faultLines.every((line) => line.level === 40), 'at warn')
    assert.ok(faultLines.some((line) => line.code === 'ECONNREFUSED'), JSON.stringify(faultLines))

    await proxy.start()
    const returnedAt = performance.now()
    await waitFor('/readyz to answer 200 again', async () => (await request(service, 'GET', '/readyz')).status === 200)
    const recoveryMs = performance.now() - returnedAt
    t.diagnostic(`ready again ${recoveryMs.toFixed(0)} ms after the database came back`)
    assert.ok(recoveryMs < 5000, `recovered in ${recoveryMs.toFixed(0)} ms`)

    const login = await calls[0]?.[1]()
    assert.equal(login?.status, 200)
    assert.equal((await calls[1]?.[1]())?.status, 201)
    assert.equal((await calls[2]?.[1]())?.status, 200)
    assert.equal((await calls[3]?.[1]())?.status, 201)
    const list = await calls[4]?.[1]()
    assert.equal(list?.status, 200)
    assert.deepEqual((list?.body.items as Array<{ title: string }>).map((post) => post.title), ['during', 'before'])
    assert.equal((await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: login?.body.refreshToken } })).status, 200)
  })

  it('a request whose connection drops while its query runs gets 503, and its transaction writes nothing', async () => {
    const token = (await registerUser(service)).body.accessToken as string
    const admin = new pg.Client({ connectionString: database.url })
    await admin.connect()
    try {
      // Hold writes to both tables (reads pass), so a registration and a post wait inside PostgreSQL.
      await admin.query('BEGIN')
      await admin.query('LOCK TABLE users, posts IN SHARE MODE')
      const email = uniqueEmail('in-flight')
      const registration = request(service, 'POST', '/api/v1/auth/register', { body: { email, password: 'in flight password' } })
      const post = request(service, 'POST', '/api/v1/posts', { token, body: { title: 'in flight', body: 'when the connection drops' } })
      await waitFor('the registration and the post to wait on the lock', async () => await lockWaiters(admin) === 2)

      await proxy.stop()
      assertAnswered503(await registration, 'DATABASE_UNAVAILABLE', 'a registration in its transaction')
      assertAnswered503(await post, 'DATABASE_UNAVAILABLE', 'a post in its query')
      await admin.query('ROLLBACK')
      const { rows } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM users WHERE email = $1', [email])
      assert.equal(rows[0]?.n, 0, 'its COMMIT was never sent')
    } finally {
      await admin.end()
      await proxy.start()
    }
    await waitFor('the service to be ready again', async () => (await request(service, 'GET', '/readyz')).status === 200)
  })

  it('discards an idle connection the database ends (57P01), logs it, and reconnects on the next query', async () => {
    const { logger, lines } = capturingLogger('warn')
    const direct = await serviceOn(database, database.url, 2, { log: logger })
    try {
      const { rows } = await direct.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
      assert.equal(direct.pool.idleCount, 1)
      const admin = new pg.Client({ connectionString: database.url })
      await admin.connect()
      try {
        await admin.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid])
      } finally {
        await admin.end()
      }
      await waitFor('the pool to drop its dead connection', () => direct.pool.totalCount === 0)
      assert.ok(lines.some((line) => line.msg === 'database connection lost' && line.code === '57P01' && line.level === 40), JSON.stringify(lines))
      assert.equal((await request(direct.service, 'GET', '/api/v1/posts')).status, 200)
    } finally {
      await direct.close()
    }
  })
})

describe('a deadline on getting a database connection (TOLLBOOTH_DB_ACQUIRE_TIMEOUT_MS)', () => {
  let database: TestDatabase
  before(async () => { database = await createTestDatabase() })
  after(async () => { await database.drop() })

  it('defaults to the pool\'s documented deadline', () => {
    assert.equal(loadConfig({ env: {} }).databaseAcquireTimeoutMs, defaultAcquireTimeoutMs)
    assert.equal(loadConfig({ env: { TOLLBOOTH_DB_ACQUIRE_TIMEOUT_MS: '250' } }).databaseAcquireTimeoutMs, 250)
  })

  it('a saturated pool answers 503 SERVICE_OVERLOADED with Retry-After at the deadline instead of queueing; /readyz stays 200', async () => {
    const acquireTimeoutMs = 300
    const { logger, lines } = capturingLogger('warn')
    const running = await serviceOn(database, database.url, 1, { acquireTimeoutMs, log: logger })
    try {
      const { email, password, body } = await registerUser(running.service)
      const token = body.accessToken as string
      const held = await running.pool.connect() // the pool's only connection, busy until released
      try {
        for (const [what, call] of [
          ['me', async () => await request(running.service, 'GET', '/api/v1/me', { token })],
          ['login', async () => await request(running.service, 'POST', '/api/v1/auth/login', { body: { email, password } })],
          ['create a post', async () => await request(running.service, 'POST', '/api/v1/posts', { token, body: { title: 't', body: 'b' } })],
        ] as const) {
          const startedAt = performance.now()
          const response = await call()
          const elapsedMs = performance.now() - startedAt
          assertAnswered503(response, 'SERVICE_OVERLOADED', what)
          assert.equal(response.headers.get('retry-after'), '1')
          assert.ok(elapsedMs >= acquireTimeoutMs - 20, `${what} waited for the deadline (${elapsedMs.toFixed(0)} ms)`)
          assert.ok(elapsedMs < acquireTimeoutMs + 2000, `${what} answered at the deadline, not later (${elapsedMs.toFixed(0)} ms)`)
        }
        assert.equal((await request(running.service, 'GET', '/readyz')).status, 200, 'busy is not unready')
        assert.ok(lines.some((line) => line.msg === 'database pool saturated'), 'and it is logged')
      } finally {
        held.release()
      }
      assert.equal((await request(running.service, 'GET', '/api/v1/me', { token })).status, 200)
    } finally {
      await running.close()
    }
  })

  it('a database that goes silent answers 503 DATABASE_UNAVAILABLE at the deadline, not a hang', async () => {
    const proxy = await startTcpProxy(database.url)
    const acquireTimeoutMs = 300
    const running = await serviceOn(database, proxy.proxied(database.url), 1, { acquireTimeoutMs, log: capturingLogger('warn').logger })
    try {
      // Any user and session ids: the route needs the database before it can tell whether the session is live.
      const token = createAccessTokens(testJwtSecret, 60).sign(randomUUID(), randomUUID(), ['pwd'])
      proxy.freeze()
      const startedAt = performance.now()
      // One connects (and never hears back); the other waits behind it for the only slot.
      const answers = await Promise.all([1, 2].map(async () => await request(running.service, 'GET', '/api/v1/me', { token })))
      const elapsedMs = performance.now() - startedAt
      for (const [i, answer] of answers.entries()) assertAnswered503(answer, 'DATABASE_UNAVAILABLE', `request ${i + 1}`)
      assert.ok(elapsedMs < acquireTimeoutMs + 2000, `answered in ${elapsedMs.toFixed(0)} ms`)
      proxy.thaw()
      assert.equal((await request(running.service, 'GET', '/readyz')).status, 200)
    } finally {
      await running.close()
      await proxy.close()
    }
  })
})

describe('withTransaction', () => {
  // A ROLLBACK without a deadline would wait on the silent connection forever: fail instead of hanging.
  it('destroys a client whose ROLLBACK fails instead of returning it to the pool', { timeout: 10_000 }, async () => {
    const database = await createTestDatabase()
    const proxy = await startTcpProxy(database.url)
    const { logger, lines } = capturingLogger('warn')
    const pool = createDatabasePool(proxy.proxied(database.url), 1, { rollbackTimeoutMs: 200, log: logger })
    try {
      await assert.rejects(withTransaction(pool, async (client) => {
        await client.query('SELECT 1')
        proxy.freeze() // the ROLLBACK goes out and never hears back
        throw new Error('the work failed')
      }), /the work failed/)
      assert.equal(pool.totalCount, 0, 'the client left the pool')
      assert.equal(pool.idleCount, 0)
      assert.ok(lines.some((line) => line.msg === 'database connection given up'), JSON.stringify(lines))
      proxy.thaw()
      const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one')
      assert.equal(rows[0]?.one, 1, 'a new connection serves the next query')
    } finally {
      await pool.end()
      await proxy.close()
      await database.drop()
    }
  })

  it('returns a client whose ROLLBACK succeeds to the pool', async () => {
    const database = await createTestDatabase()
    const pool = createDatabasePool(database.url, 1)
    try {
      await assert.rejects(withTransaction(pool, async () => { throw new Error('the work failed') }), /the work failed/)
      assert.equal(pool.totalCount, 1)
      assert.equal(pool.idleCount, 1)
    } finally {
      await pool.end()
      await database.drop()
    }
  })
})

describe('which failures mean the database is out of reach', () => {
  const withCode = (code: string, message = 'x'): Error => Object.assign(new Error(message), { code })
  const outOfReach: Array<[string, unknown]> = [
    ...['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND'].map((code): [string, unknown] => [code, withCode(code)]),
    ...['08000', '08003', '08006', '08001', '08004', '08P01', '57P01', '57P02', '57P03', '53300'].map((code): [string, unknown] => [`SQLSTATE ${code}`, withCode(code)]),
    ...['Connection terminated unexpectedly', 'Connection terminated due to connection timeout', 'timeout exceeded when trying to connect', 'Client has encountered a connection error and is not queryable']
      .map((message): [string, unknown] => [message, new Error(message)]),
    ['a refusal wrapped as a cause', new Error('Connection terminated due to connection timeout', { cause: withCode('ECONNREFUSED') })],
    ['an AggregateError of every address tried', new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], 'connect failed')],
  ]
  const notOutOfReach: Array<[string, unknown]> = [
    ['a unique violation', withCode('23505')],
    ['NUL in text', withCode('22021')],
    ['a syntax error', withCode('42601')],
    ['a wrong password (a configuration error, not an outage)', withCode('28P01')],
    ['a query timeout', new Error('Query read timeout')],
    ['anything else', new Error('boom')],
    ['not an error', 'ECONNREFUSED'],
  ]
  for (const [what, err] of outOfReach) {
    it(`${what}: DATABASE_UNAVAILABLE`, () => {
      assert.equal(isConnectionFailure(err), true)
      const mapped = toTollboothError(err as Error)
      assert.equal(mapped.code, 'DATABASE_UNAVAILABLE')
      assert.equal(mapped.statusCode, 503)
      assert.equal(mapped.retryAfterSeconds, 2)
      assert.doesNotMatch(mapped.message, driverText)
    })
  }
  for (const [what, err] of notOutOfReach) {
    it(`${what}: not a connection failure`, () => {
      assert.equal(isConnectionFailure(err), false)
    })
  }

  it('a real refused connection is one', async () => {
    const server = net.createServer()
    await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
    const { port } = server.address() as net.AddressInfo
    await new Promise((resolve) => { server.close(resolve) }) // nothing listens there now
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'nobody', database: 'none' })
    const err = await client.connect().then(() => undefined, (error: unknown) => error)
    assert.equal(isConnectionFailure(err), true, String(err))
  })
})

describe('fault logging', () => {
  it('logs the first fault at once, then at most one line per interval with the count', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] })
    const lines: Array<{ fields: Record<string, unknown>, message: string }> = []
    const log = new ThrottledFaultLog({ warn: (fields, message) => { lines.push({ fields, message }) } }, 1000)
    for (let i = 0; i < 2000; i++) log.report('database connection failed', { code: 'ECONNREFUSED' })
    log.report('database pool saturated', { size: 10 })
    assert.deepEqual(lines.map((line) => line.message), ['database connection failed', 'database pool saturated'])
    t.mock.timers.tick(1000)
    assert.equal(lines.length, 3)
    assert.equal(lines[2]?.fields.repeated, 1999)
    assert.equal(lines[2]?.fields.code, 'ECONNREFUSED')
    assert.match(lines[2]?.message ?? '', /1999 more in the last 1000 ms/)
    t.mock.timers.tick(1000) // a quiet second: nothing to sum up
    assert.equal(lines.length, 3)
    t.mock.timers.tick(5000)
    log.report('database connection failed', { code: 'ECONNRESET' })
    assert.equal(lines.length, 4, 'after a quiet spell the next fault is logged at once')
  })
})
