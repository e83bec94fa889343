import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { packageVersion } from '../../src/paths.js'
import { request, startTestService, type TestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/** The value of an unlabelled series in a /metrics text, or NaN when it is absent. */
function metricValue (text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  return Number(line?.split(' ')[1])
}

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
    // The libuv canary samples on its own clock: wait for its first sample to be counted.
    let response = await request(service, 'GET', '/metrics')
    await waitFor('the libuv canary to sample once', async () => {
      response = await request(service, 'GET', '/metrics')
      return metricValue(response.body as string, 'tollbooth_libuv_canary_seconds_count') > 0
    })
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
      'tollbooth_event_loop_resolution_seconds 0.01',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'tollbooth_hash_pool_info{strategy="tollbooth",algorithm="argon2id"',
      `tollbooth_info{version="${packageVersion}",strategy="tollbooth",algorithm="argon2id",node_version="${process.version}"} 1`,
      'tollbooth_libuv_canary_pending_seconds 0',
    ]) {
      assert.ok(text.includes(name), `metrics should include ${name}`)
    }
    assert.match(text, /tollbooth_hash_pool_info\{[^}]*malloc_settings="(set|missing|not applicable)"\} 1/, 'whether glibc\'s malloc settings for hashing are set')
  })

  it('shows a starved libuv pool while the canary is stuck in it, not only once it returns', async () => {
    const metric = async (name: string): Promise<number> => metricValue((await request(service, 'GET', '/metrics')).body as string, name)
    // Opening a FIFO for reading blocks until a writer comes: each open holds one libuv thread, using no CPU.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-fifo-'))
    const fifos = Array.from({ length: Number(process.env.UV_THREADPOOL_SIZE ?? 4) }, (_, i) => path.join(dir, `fifo-${i}`))
    for (const fifo of fifos) execFileSync('mkfifo', [fifo])
    const opened = fifos.map(async (fifo) => await new Promise<number>((resolve, reject) => {
      fs.open(fifo, 'r', (err, fd) => { if (err === null) resolve(fd); else reject(err) })
    }))
    const writers: number[] = []
    try {
      await waitFor('the canary to be stuck for 0.3 s', async () => await metric('tollbooth_libuv_canary_pending_seconds') > 0.3)
    } finally {
      // A writer opening releases each blocked reader (and the pool with it).
      for (const fifo of fifos) writers.push(fs.openSync(fifo, 'w'))
      for (const fd of [...writers, ...await Promise.all(opened)]) fs.closeSync(fd)
      fs.rmSync(dir, { recursive: true, force: true })
    }
    await waitFor('the canary to come back', async () => await metric('tollbooth_libuv_canary_pending_seconds') === 0)
    assert.ok(await metric('tollbooth_libuv_canary_last_seconds') > 0.3, 'and its latency is recorded')
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
