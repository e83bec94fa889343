import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { startServe } from '../../src/launcher/index.js'
import { startService, type RunningService } from '../../src/process/start.js'
import { createLogger } from '../../src/http/logger.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { request, serveEnv, startTestService, testJwtSecret, testKeyEncryptionKey } from '../helpers/service.js'

describe('TOLLBOOTH_ADMIN_PORT: /metrics and the readiness details on a listener of their own', () => {
  let db: TestDatabase
  let service: RunningService
  before(async () => {
    db = await createTestDatabase()
    const config = loadConfig({
      env: {},
      overrides: { databaseUrl: db.url, publicUrl: 'http://127.0.0.1', keyEncryptionKey: testKeyEncryptionKey, jwtSecret: testJwtSecret, port: 0, adminPort: 0, logLevel: 'silent', hashThreads: 1, hashAlgorithm: 'bcrypt', bcryptCost: 4, shutdownDrainMs: 0 },
    })
    service = await startService(config, { logger: createLogger('silent') })
  })
  after(async () => {
    await service.close()
    await db.drop()
  })

  it('serves /metrics and /readyz with the hash pool\'s figures on the admin port, on loopback', async () => {
    assert.ok(service.adminUrl?.startsWith('http://127.0.0.1:'), service.adminUrl)
    assert.notEqual(service.adminUrl, service.url)
    const admin = { url: service.adminUrl ?? '' }
    const metrics = await request(admin, 'GET', '/metrics')
    assert.equal(metrics.status, 200)
    assert.match(metrics.body as string, /^tollbooth_hash_pool_threads 1$/m)
    const ready = await request(admin, 'GET', '/readyz')
    assert.equal(ready.status, 200)
    assert.deepEqual(ready.body, { status: 'ready', hashPool: { threads: 1, queued: 0 } })
    assert.equal((await request(admin, 'GET', '/healthz')).status, 200)
    assert.equal(ready.headers.get('x-content-type-options'), 'nosniff', 'the admin listener sends the security headers too')
  })

  it('leaves the API port /healthz and a bare /readyz, and answers 404 for /metrics', async () => {
    const metrics = await request(service, 'GET', '/metrics')
    assert.equal(metrics.status, 404)
    assert.equal(metrics.body.error.code, 'NOT_FOUND')
    const ready = await request(service, 'GET', '/readyz')
    assert.equal(ready.status, 200)
    assert.deepEqual(ready.body, { status: 'ready' })
    assert.equal((await request(service, 'GET', '/healthz')).status, 200)
    // The API's own requests still count in the admin port's metrics.
    assert.match((await request({ url: service.adminUrl ?? '' }, 'GET', '/metrics')).body as string, /tollbooth_http_request_duration_seconds_count\{method="GET",route="\/readyz",status="200"\} [1-9]/)
  })

  it('refuses an admin port equal to the API port', () => {
    assert.throws(() => loadConfig({ env: { PORT: '4000', TOLLBOOTH_ADMIN_PORT: '4000' } }), { code: 'CONFIG_INVALID', field: 'TOLLBOOTH_ADMIN_PORT' })
  })
})

describe('TOLLBOOTH_ADMIN_PORT with serve --workers 2 (through the launcher, as the lab starts it)', () => {
  it('the primary serves every worker\'s metrics, aggregated, on the admin port; the workers answer 404 for /metrics', async () => {
    const db = await createTestDatabase()
    const serve = await startServe({ env: serveEnv(db.url, { TOLLBOOTH_ADMIN_PORT: '0', TOLLBOOTH_WORKERS: '2', TOLLBOOTH_HASH_THREADS: '2' }), startTimeoutMs: 60_000 })
    try {
      assert.ok(serve.ready.adminUrl !== undefined, 'the ready file names the admin listener')
      assert.equal(serve.metricsUrl, serve.ready.adminUrl, 'the launcher says where /metrics is')
      assert.equal((await request(serve, 'GET', '/metrics')).status, 404)
      assert.deepEqual((await request(serve, 'GET', '/readyz')).body, { status: 'ready' })
      const text = (await request({ url: serve.metricsUrl }, 'GET', '/metrics')).body as string
      const pids = [...text.matchAll(/^tollbooth_worker_hash_pool_threads\{pid="(\d+)"\} 1$/gm)].map((match) => match[1])
      assert.equal(pids.length, 2, `both workers in the aggregate:\n${text.split('\n').filter((line) => line.startsWith('tollbooth_worker')).join('\n')}`)
      assert.deepEqual((await request({ url: serve.metricsUrl }, 'GET', '/readyz')).body, { status: 'ready', workers: { listening: 2, configured: 2 } })
    } finally {
      await serve.stop()
      await db.drop()
    }
  })
})

describe('/readyz never echoes what a driver or the hash pool said', () => {
  it('without an admin port: /metrics and the details on the API port, as before; a dead hash pool: 503 NOT_READY "hash pool unavailable"', async () => {
    const service = await startTestService({ threads: 1 })
    try {
      assert.equal((await request(service, 'GET', '/metrics')).status, 200)
      assert.deepEqual((await request(service, 'GET', '/readyz')).body, { status: 'ready', hashPool: { threads: 1, queued: 0 } })
      await service.engine.close()
      const ready = await request(service, 'GET', '/readyz')
      assert.equal(ready.status, 503)
      assert.deepEqual(ready.body, { error: { code: 'NOT_READY', message: 'hash pool unavailable' } })
    } finally {
      await service.app.close()
      await service.db.drop()
    }
  })
})
