import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { request, startTestService, type TestService } from '../helpers/service.js'

describe('health, readiness, metrics and OpenAPI', () => {
  let service: TestService
  before(async () => { service = await startTestService() })
  after(async () => { await service.close() })

  it('GET /healthz answers ok', async () => {
    const response = await request(service, 'GET', '/healthz')
    assert.equal(response.status, 200)
    assert.deepEqual(response.body, { status: 'ok' })
  })

  it('GET /readyz answers ready with the pool size', async () => {
    const response = await request(service, 'GET', '/readyz')
    assert.equal(response.status, 200)
    assert.equal(response.body.status, 'ready')
    assert.equal(response.body.hashPool.threads, 2)
  })

  it('GET /metrics exposes HTTP, hash pool, event loop, libuv canary, CPU and memory series', async () => {
    await request(service, 'POST', '/api/v1/auth/login', { body: { email: 'nobody@example.com', password: 'whatever1' } })
    await new Promise((resolve) => setTimeout(resolve, 1200)) // let the libuv canary sample once
    const response = await request(service, 'GET', '/metrics')
    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /text\/plain/)
    const text = response.body as string
    for (const name of [
      'tollbooth_http_request_duration_seconds_bucket{',
      'route="/api/v1/auth/login"',
      'tollbooth_hash_pool_threads 2',
      'tollbooth_hash_pool_running',
      'tollbooth_hash_pool_queued',
      'tollbooth_hash_wait_seconds_bucket',
      'tollbooth_hash_run_seconds_bucket',
      'tollbooth_hash_tasks_total{kind="verify",outcome="ok"} 1',
      'tollbooth_libuv_canary_seconds_count',
      'nodejs_eventloop_lag_p99_seconds',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'tollbooth_hash_pool_info{strategy="tollbooth",algorithm="argon2id"',
    ]) {
      assert.ok(text.includes(name), `metrics should include ${name}`)
    }
  })

  it('GET /openapi.json is an OpenAPI 3.1 document of every route', async () => {
    const response = await request(service, 'GET', '/openapi.json')
    assert.equal(response.status, 200)
    assert.equal(response.body.openapi, '3.1.0')
    const paths = response.body.paths as Record<string, Record<string, unknown>>
    const expected: Array<[string, string]> = [
      ['/api/v1/auth/register', 'post'], ['/api/v1/auth/login', 'post'], ['/api/v1/auth/refresh', 'post'],
      ['/api/v1/auth/logout', 'post'], ['/api/v1/me', 'get'], ['/api/v1/posts', 'post'], ['/api/v1/posts', 'get'],
      ['/healthz', 'get'], ['/readyz', 'get'], ['/metrics', 'get'],
    ]
    for (const [path, method] of expected) assert.ok(paths[path]?.[method] !== undefined, `${method.toUpperCase()} ${path} documented`)
    assert.ok(response.body.components.schemas.ErrorResponse !== undefined)
    assert.deepEqual(response.body.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
  })

  it('answers 503 NOT_READY when the database is gone, while /healthz still answers', async () => {
    const broken = await startTestService()
    await broken.db.drop() // the pool ends and the database disappears
    const ready = await request(broken, 'GET', '/readyz')
    assert.equal(ready.status, 503)
    assert.equal(ready.body.error.code, 'NOT_READY')
    const live = await request(broken, 'GET', '/healthz')
    assert.equal(live.status, 200)
    await broken.app.close()
    await broken.engine.close()
  })
})

describe('lab diagnostic routes', () => {
  it('do not exist unless the service starts with TOLLBOOTH_LAB_DIAGNOSTICS', async () => {
    const service = await startTestService()
    try {
      const response = await request(service, 'POST', '/api/v1/lab/login?hash=noop', { body: { email: 'a@example.com', password: 'x' } })
      assert.equal(response.status, 404)
    } finally {
      await service.close()
    }
  })

  it('split login into lookup only, lookup + JWT, and the full path', async () => {
    const service = await startTestService({ config: { labDiagnostics: true } })
    try {
      const register = await request(service, 'POST', '/api/v1/auth/register', { body: { email: 'lab@example.com', password: 'lab password' } })
      assert.equal(register.status, 201)
      const hashesBefore = service.engine.stats().completed
      const noop = await request(service, 'POST', '/api/v1/lab/login?hash=noop', { body: { email: 'lab@example.com', password: 'wrong but unchecked' } })
      assert.equal(noop.status, 200)
      assert.equal(noop.body.accessToken, undefined)
      const jwt = await request(service, 'POST', '/api/v1/lab/login?hash=jwt-only', { body: { email: 'lab@example.com', password: 'unchecked' } })
      assert.equal(jwt.status, 200)
      assert.equal(typeof jwt.body.accessToken, 'string')
      assert.equal(service.engine.stats().completed, hashesBefore, 'no hash for noop and jwt-only')
      const full = await request(service, 'POST', '/api/v1/lab/login?hash=full', { body: { email: 'lab@example.com', password: 'lab password' } })
      assert.equal(full.status, 200)
      assert.equal(service.engine.stats().completed, hashesBefore + 1)
      const wrong = await request(service, 'POST', '/api/v1/lab/login?hash=full', { body: { email: 'lab@example.com', password: 'wrong' } })
      assert.equal(wrong.status, 401)
    } finally {
      await service.close()
    }
  })
})
