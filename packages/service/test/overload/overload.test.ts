import assert from 'node:assert/strict'
import http from 'node:http'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { after, before, describe, it } from 'node:test'
import { registerUser, request, seedPolicy, startTestService, type TestService } from '../helpers/service.js'
import { slowBcryptHash } from '../helpers/policies.js'
import { waitFor } from '../helpers/wait.js'

describe('under a login storm', () => {
  let service: TestService
  let account: { email: string, password: string }
  before(async () => {
    service = await startTestService({ policy: seedPolicy, threads: 1, config: { loginDeadlineMs: 300 } })
    const { email, password } = await registerUser(service)
    account = { email, password }
  })
  after(async () => { await service.close() })

  it('answers 503 SERVICE_OVERLOADED with Retry-After at once when the queue cannot meet the deadline', async () => {
    const meanRunMs = service.engine.stats().meanRunMs
    const storm = 60
    const started = performance.now()
    const results = await Promise.all(Array.from({ length: storm }, async () => {
      const sent = performance.now()
      const response = await request(service, 'POST', '/api/v1/auth/login', { body: account })
      return { response, ms: performance.now() - sent }
    }))
    const totalMs = performance.now() - started
    const ok = results.filter((r) => r.response.status === 200)
    const overloaded = results.filter((r) => r.response.status === 503)
    assert.equal(ok.length + overloaded.length, storm, `statuses: ${results.map((r) => r.response.status).join(',')}`)
    assert.ok(ok.length >= 1, 'some logins still succeed')
    assert.ok(overloaded.length >= storm / 2, `most of ${storm} logins against a 300 ms deadline on one ${meanRunMs.toFixed(0)} ms thread are refused (got ${overloaded.length})`)
    for (const { response } of overloaded) {
      assert.ok(['SERVICE_OVERLOADED', 'HASH_DEADLINE_EXCEEDED'].includes(response.body.error.code), response.body.error.code)
      const retryAfter = Number(response.headers.get('retry-after'))
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After ${String(response.headers.get('retry-after'))}`)
    }
    // Refusals come quickly: the fastest refusal is well under the time all the work would have taken.
    const fastestRefusal = Math.min(...overloaded.map((r) => r.ms))
    assert.ok(fastestRefusal < (storm * meanRunMs) / 2, `fastest refusal ${fastestRefusal.toFixed(0)} ms vs ${(storm * meanRunMs).toFixed(0)} ms of queued work`)
    // Nothing waited toward a 30 s timeout: everything was answered within a few deadlines.
    assert.ok(totalMs < 10_000, `storm answered in ${totalMs.toFixed(0)} ms`)
    const metrics = await request(service, 'GET', '/metrics')
    assert.match(metrics.body as string, /tollbooth_hash_tasks_total\{kind="verify",outcome="(rejected|deadline)"\} [1-9]/)
  })
})

describe('a client that hangs up', () => {
  let service: TestService
  let account: { email: string, password: string }
  before(async () => {
    service = await startTestService({ policy: seedPolicy, threads: 1, config: { loginDeadlineMs: 30_000 } })
    const { email, password } = await registerUser(service)
    account = { email, password }
  })
  after(async () => { await service.close() })

  it('has its queued hash cancelled before it costs anything', async () => {
    const stats = (): { running: number, queued: number } => service.engine.stats()
    // The single thread held by a blocker (a verify of cost 14: a second or more, made in a millisecond),
    // so three logins queue behind it whatever the machine's speed, then a fourth, which hangs up.
    const before = service.engine.stats()
    const blocker = service.engine.verify('blocker', slowBcryptHash(14))
    await waitFor('the blocker running', () => stats().running === 1, { intervalMs: 1 })
    const busy = Array.from({ length: 3 }, async () => await request(service, 'POST', '/api/v1/auth/login', { body: account }))
    await waitFor('three logins queued behind it', () => stats().queued === 3, { intervalMs: 1 })
    const body = JSON.stringify(account)
    const req = http.request(`${service.url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } })
    req.on('error', () => {})
    req.end(body)
    await waitFor('the fourth login queued', () => stats().queued === 4, { intervalMs: 1 })
    req.destroy()
    await waitFor('the cancellation', () => service.engine.stats().cancelled > before.cancelled, { intervalMs: 1 })
    assert.equal((await blocker).match, false)
    const statuses = (await Promise.all(busy)).map((r) => r.status)
    assert.deepEqual(statuses, [200, 200, 200])
    const afterStats = service.engine.stats()
    assert.equal(afterStats.cancelled - before.cancelled, 1, 'the abandoned login was removed from the queue')
    assert.equal(afterStats.completed - before.completed, 4, 'only the blocker and the three live logins cost a hash')
  })
})

describe('the event loop during 200 concurrent logins', () => {
  let service: TestService
  let account: { email: string, password: string }
  before(async () => {
    service = await startTestService({ policy: { ...seedPolicy, bcrypt: { cost: 8 } }, threads: 2, maxQueue: 1000, config: { loginDeadlineMs: 60_000 } })
    const { email, password } = await registerUser(service)
    account = { email, password }
  })
  after(async () => { await service.close() })

  it('stays responsive, and so does /healthz', async () => {
    const histogram = monitorEventLoopDelay({ resolution: 10 })
    histogram.enable()
    const healthLatencies: number[] = []
    const storm = { running: true }
    const probe = (async () => {
      while (storm.running) {
        const started = performance.now()
        const response = await request(service, 'GET', '/healthz')
        assert.equal(response.status, 200)
        healthLatencies.push(performance.now() - started)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    })()
    const logins = await Promise.all(Array.from({ length: 200 }, async () => await request(service, 'POST', '/api/v1/auth/login', { body: account })))
    storm.running = false
    await probe
    histogram.disable()
    assert.ok(logins.every((r) => r.status === 200), `statuses: ${[...new Set(logins.map((r) => r.status))].join(',')}`)
    assert.equal(service.engine.stats().completed >= 200, true)
    const loopP99Ms = histogram.percentile(99) / 1e6
    healthLatencies.sort((a, b) => a - b)
    const healthP99 = healthLatencies[Math.floor(healthLatencies.length * 0.99)] ?? Infinity
    // Generous bounds on a shared 2-core machine: hashing on the loop would block for seconds.
    assert.ok(loopP99Ms < 250, `event-loop delay p99 ${loopP99Ms.toFixed(1)} ms`)
    assert.ok(healthLatencies.length >= 5, `${healthLatencies.length} health probes answered`)
    assert.ok(healthP99 < 500, `/healthz p99 ${healthP99.toFixed(1)} ms during the storm`)
  })
})
