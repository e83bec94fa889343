import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type pg from 'pg'
import { loadConfig } from '../../src/config/index.js'
import { openFilesLimit } from '../../src/machine/index.js'
import { checkConnectionLimits, startService } from '../../src/process/start.js'
import { createTestDatabase, holdQueries, watchQueries, type QueryHold } from '../helpers/database.js'
import { capturingLogger, registerUser, request, startTestService, testJwtSecret, testKeyEncryptionKey, uniqueEmail, type JsonResponse, type TestService } from '../helpers/service.js'
import { pollUntil } from '../helpers/wait.js'

function assertShed (response: JsonResponse, what: string): void {
  assert.equal(response.status, 503, `${what}: ${JSON.stringify(response.body)}`)
  assert.equal(response.body.error.code, 'SERVICE_OVERLOADED', what)
  assert.equal(typeof response.body.error.message, 'string')
  assert.equal(response.headers.get('retry-after'), '1', what)
}

async function shedCount (service: TestService, reason: string): Promise<number> {
  const metrics = await request(service, 'GET', '/metrics')
  const line = (metrics.body as string).split('\n').find((l) => l.startsWith(`tollbooth_requests_shed_total{reason="${reason}"}`))
  return Number(line?.split(' ').pop() ?? Number.NaN)
}

/**
 * Saturates this process's event loop, which the service shares: every turn of the loop
 * spends `busyMs` in a busy wait, so each event-loop delay sample comes `busyMs` late, while
 * requests are still read and answered between turns (slowly, as on a saturated server).
 */
function saturateEventLoop (busyMs: number): () => void {
  let running = true
  const turn = (): void => {
    if (!running) return
    const end = performance.now() + busyMs
    while (performance.now() < end) { /* busy, on purpose */ }
    setImmediate(turn)
  }
  setImmediate(turn)
  return () => { running = false }
}

/** Holds every `GET /me` user lookup at the database until released; `held` resolves when `count` are waiting. */
function holdUserLookups (pool: pg.Pool, count: number): QueryHold {
  return holdQueries(pool, /FROM users WHERE id = \$1/, count)
}

describe('load shedding on a saturated event loop', () => {
  let service: TestService
  let token: string
  before(async () => {
    service = await startTestService({ config: { maxEventLoopDelayMs: 40, pressureSampleIntervalMs: 50, maxInFlight: 0 } })
    // Registered once the loop is free: on a loaded machine this service may shed it at first.
    const account = { email: uniqueEmail(), password: 'correct horse battery staple' }
    const registered = await pollUntil('a registration while the loop is free', async () => await request(service, 'POST', '/api/v1/auth/register', { body: account }), (r) => r.status === 201, { intervalMs: 1 })
    token = registered.body.accessToken as string
  })
  after(async () => { await service.close() })

  it('answers the API 503 SERVICE_OVERLOADED with Retry-After at once, never the operations routes, and recovers', async () => {
    const before = await shedCount(service, 'event_loop_delay')
    // On a loaded machine a 50 ms sample of this loop can pass 40 ms on its own: wait (bounded) for a free one.
    await pollUntil('service while the loop is free', async () => await request(service, 'GET', '/api/v1/me', { token }), (r) => r.status === 200, { intervalMs: 1 })
    const stop = saturateEventLoop(80)
    try {
      const first = await pollUntil('the first refusal', async () => await request(service, 'GET', '/api/v1/me', { token }), (r) => r.status === 503, { intervalMs: 1 })
      assertShed(first, 'GET /me')
      // Every API route sheds, a public one and a hash route included, and the body is never parsed:
      // malformed JSON is refused as overload, not answered 400.
      assertShed(await request(service, 'GET', '/api/v1/posts'), 'GET /posts')
      assertShed(await request(service, 'POST', '/api/v1/posts', { token, body: '{"title": ' }), 'POST /posts, malformed JSON')
      assertShed(await request(service, 'POST', '/api/v1/auth/login', { body: { email: 'a@example.com', password: 'whatever it is' } }), 'POST /auth/login')
      for (const path of ['/healthz', '/readyz', '/metrics', '/openapi.json']) {
        assert.equal((await request(service, 'GET', path)).status, 200, `${path} is never shed`)
      }
    } finally {
      stop()
    }
    await pollUntil('service again once the loop is free', async () => await request(service, 'GET', '/api/v1/me', { token }), (r) => r.status === 200, { intervalMs: 1 })
    assert.ok(await shedCount(service, 'event_loop_delay') >= before + 4, 'refusals counted in /metrics by reason')
  })
})

describe('the in-flight cap', () => {
  const cap = 3
  let service: TestService
  let account: { email: string, password: string }
  let token: string
  before(async () => {
    service = await startTestService({ config: { maxInFlight: cap, maxEventLoopDelayMs: 0 } })
    const registered = await registerUser(service)
    account = { email: registered.email, password: registered.password }
    token = registered.body.accessToken as string
  })
  after(async () => { await service.close() })

  it('refuses the request past the cap at once, without its body or the database, and admits again when they finish', async () => {
    const lookups = holdUserLookups(service.db.pool, cap)
    let held: Array<Promise<JsonResponse>> = []
    try {
      held = Array.from({ length: cap }, async () => await request(service, 'GET', '/api/v1/me', { token }))
      await lookups.held
      const queriesBefore = lookups.texts.length
      const started = performance.now()
      const refused = await request(service, 'GET', '/api/v1/me', { token })
      const refusedMs = performance.now() - started
      assertShed(refused, `GET /me number ${cap + 1}`)
      assert.ok(refusedMs < 2000, `refused at once (${refusedMs.toFixed(0)} ms), not after the held requests`)
      assertShed(await request(service, 'POST', '/api/v1/posts', { token, body: '{"title": ' }), 'malformed JSON at the cap')
      assert.equal(lookups.texts.length, queriesBefore, 'no query for a refused request')
      for (const path of ['/healthz', '/readyz', '/metrics', '/.well-known/jwks.json']) {
        assert.equal((await request(service, 'GET', path)).status, 200, `${path} is never shed`)
      }
      // Logins wait for hash threads behind an admission of their own: counted apart, never refused by this cap.
      assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: account })).status, 200, 'a login at the cap')
      const metrics = (await request(service, 'GET', '/metrics')).body as string
      assert.match(metrics, /tollbooth_api_requests_in_flight\{counted="capped"\} 3\n/)
      assert.match(metrics, /tollbooth_requests_shed_total\{reason="in_flight"\} 2\n/)
      assert.equal(lookups.waiting(), cap, 'the held requests are still held')
    } finally {
      lookups.release()
    }
    for (const response of await Promise.all(held)) assert.equal(response.status, 200)
    assert.equal((await request(service, 'GET', '/api/v1/me', { token })).status, 200, 'admitted again once they finished')
  })

  it('frees the place of a client that hangs up', async () => {
    const lookups = holdUserLookups(service.db.pool, cap)
    const sockets: http.ClientRequest[] = []
    try {
      for (let i = 0; i < cap; i++) {
        const req = http.get(`${service.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` }, agent: false })
        req.on('error', () => {})
        sockets.push(req)
      }
      await lookups.held
      assertShed(await request(service, 'GET', '/api/v1/me', { token }), 'at the cap')
      sockets[0]?.destroy()
      // The held request's lookup is still waiting, but its client is gone: its place is free.
      await pollUntil('a place freed by the hang-up', async () => (await request(service, 'GET', '/api/v1/posts')).status, (status) => status === 200, { intervalMs: 1 })
    } finally {
      lookups.release()
      for (const socket of sockets) socket.destroy()
    }
  })
})

describe('shedding is off under the harness\'s seed strategies', () => {
  let service: TestService
  let token: string
  before(async () => {
    // The seeds' strategies reproduce services that shed nothing, for the lab's comparison.
    service = await startTestService({ config: { maxInFlight: 1 }, harness: { strategy: 'piscina', shedding: false } })
    token = (await registerUser(service)).body.accessToken as string
  })
  after(async () => { await service.close() })

  it('does not cap requests in flight', async () => {
    const lookups = holdUserLookups(service.db.pool, 2)
    const held = [request(service, 'GET', '/api/v1/me', { token }), request(service, 'GET', '/api/v1/me', { token })]
    try {
      await lookups.held
    } finally {
      lookups.release()
    }
    for (const response of await Promise.all(held)) assert.equal(response.status, 200)
  })
})

describe('connection limits at start', () => {
  const limits = (openFiles: string): string => `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${openFiles}                 ${openFiles}                 files\n`

  it('reads the soft open-files limit from /proc/<pid>/limits', () => {
    assert.equal(openFilesLimit(limits('1024')), 1024)
    assert.equal(openFilesLimit(limits('unlimited')), Infinity)
    assert.equal(openFilesLimit('nothing here'), undefined)
    assert.ok((openFilesLimit(execFileSync('cat', ['/proc/self/limits'], { encoding: 'utf8' })) ?? 0) > 0)
  })

  it('warns when the file-descriptor limit cannot hold the connections planned for, or somaxconn caps the backlog', () => {
    const config = { maxConnections: 5000, listenBacklog: 4096, databasePoolSize: 10 }
    const files: Record<string, string> = { '/proc/self/limits': limits('1024'), '/proc/sys/net/core/somaxconn': '4096\n' }
    const low = checkConnectionLimits(config, (file) => files[file])
    assert.equal(low.openFiles, 1024)
    assert.equal(low.warnings.length, 1)
    assert.match(low.warnings[0] ?? '', /RLIMIT_NOFILE\) is 1024, below the 5266 that TOLLBOOTH_MAX_CONNECTIONS=5000 needs/)

    files['/proc/self/limits'] = limits('1048576')
    assert.deepEqual(checkConnectionLimits(config, (file) => files[file]).warnings, [])
    assert.deepEqual(checkConnectionLimits({ ...config, maxConnections: 0 }, (file) => files[file]).warnings, [], 'no cap, nothing to plan for')

    files['/proc/sys/net/core/somaxconn'] = '128\n'
    const capped = checkConnectionLimits(config, (file) => files[file])
    assert.equal(capped.somaxconn, 128)
    assert.match(capped.warnings.join('\n'), /listen backlog is capped at 128 by net.core.somaxconn/)

    assert.deepEqual(checkConnectionLimits(config, () => undefined), { openFiles: undefined, somaxconn: undefined, warnings: [] }, 'no /proc: nothing to say')
  })

  it('listens with the configured backlog and connection cap, and logs the warning at start', async () => {
    const db = await createTestDatabase()
    const { logger, lines } = capturingLogger('warn')
    const config = loadConfig({ env: {}, overrides: { databaseUrl: db.url, publicUrl: 'http://127.0.0.1', jwtSecret: testJwtSecret, keyEncryptionKey: testKeyEncryptionKey, port: 0, logLevel: 'warn', listenBacklog: 77, maxConnections: 50_000_000 } })
    const service = await startService(config, { logger })
    try {
      assert.equal(service.app.server.maxConnections, 50_000_000)
      const openFiles = openFilesLimit(execFileSync('cat', ['/proc/self/limits'], { encoding: 'utf8' })) ?? 0
      if (openFiles < 50_000_000) assert.ok(lines.some((line) => /RLIMIT_NOFILE/.test(String(line.msg))), 'the open-files warning was logged')
      const { port } = service.app.server.address() as AddressInfo
      let listening: string | undefined
      try {
        listening = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' })
      } catch {} // no ss here: the backlog cannot be read from outside
      if (listening !== undefined) assert.equal(listening.trim().split(/\s+/)[2], '77', `the listen backlog (ss: ${listening.trim()})`)
    } finally {
      await service.close()
      await db.drop()
    }
  })
})

describe('/readyz under a flood', () => {
  it('is never shed, and the requests that arrive while a check runs share it: one database check at a time, not one each', async () => {
    const service = await startTestService({})
    try {
      // Each check's query is slowed, so that many requests arrive while one runs.
      const watch = watchQueries(service.db.pool, { delayMs: (text) => text === 'SELECT 1' ? 300 : 0 })
      let statuses: number[]
      try {
        statuses = await Promise.all(Array.from({ length: 40 }, async () => (await request(service, 'GET', '/readyz')).status))
      } finally {
        watch.stop()
      }
      assert.deepEqual(new Set(statuses), new Set([200]))
      const checks = watch.texts.filter((text) => text === 'SELECT 1').length
      // Without the sharing, 40; a loaded machine may spread the requests over a few checks.
      assert.ok(checks >= 1 && checks <= 10, `${checks} database checks for 40 requests`)
      // A request after the check ended gets a fresh one, not the last outcome (a stopped database shows at once).
      const next = watchQueries(service.db.pool)
      try {
        assert.equal((await request(service, 'GET', '/readyz')).status, 200)
      } finally {
        next.stop()
      }
      assert.deepEqual(next.texts, ['SELECT 1'])
    } finally {
      await service.close()
    }
  })
})
