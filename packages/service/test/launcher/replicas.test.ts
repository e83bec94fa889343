/**
 * startReplicas (tollbooth/launcher): real services under CPU quotas behind a real HAProxy, and a
 * rolling restart under steady load that fails no request. Skipped when haproxy is missing.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createCpuQuota } from '../../src/launcher/cgroup.js'
import { haproxyBinary, haproxyConfig, checkHaproxyConfig } from '../../src/launcher/haproxy.js'
import { startReplicas, type ReplicaSet } from '../../src/launcher/index.js'
import { packageRoot } from '../../src/paths.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { testAccountEnv, testJwtSecret, testKeyEncryptionKey } from '../helpers/service.js'

const haproxy = haproxyBinary()
const noHaproxy = haproxy === undefined ? 'haproxy is not installed (Debian package `haproxy`)' : false

/** The lines both HAProxy configurations must share: the choices a test already checked in deploy/ (the limits on capped requests: haproxy-limits.test.ts). */
function settingLines (config: string): Set<string> {
  return new Set(config.split('\n').map((line) => line.trim()).filter((line) => /^(timeout (?!resolve|retry|queue)|retries|option (redispatch|httpchk|forwardfor)|retry-on|balance|http-check|mode)/.test(line)))
}

describe('the generated HAProxy configuration', () => {
  const config = haproxyConfig({ port: 8080, servers: [{ name: 'r1', port: 3001 }, { name: 'r2', port: 3002 }], statsSocket: '/tmp/x.sock' })

  it('makes the choices of deploy/haproxy/haproxy.cfg, except the faster health checks and retrying an empty response', () => {
    const deployed = settingLines(fs.readFileSync(path.join(packageRoot, '..', '..', 'deploy', 'haproxy', 'haproxy.cfg'), 'utf8'))
    const generated = settingLines(config)
    const onlyDeployed = [...deployed].filter((line) => !generated.has(line))
    const onlyGenerated = [...generated].filter((line) => !deployed.has(line))
    assert.deepEqual(onlyDeployed, ['retry-on conn-failure'])
    assert.deepEqual(onlyGenerated, ['retry-on conn-failure empty-response'])
    assert.match(config, /default-server check inter 1000ms fall 2 rise 1/)
    assert.match(config, /server r2 127\.0\.0\.1:3002/)
    assert.match(config, /bind 127\.0\.0\.1:8080/)
  })

  it('is valid for haproxy -c', { skip: noHaproxy }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-haproxy-test-'))
    try {
      const file = path.join(dir, 'haproxy.cfg')
      fs.writeFileSync(file, haproxyConfig({ port: 8080, servers: [{ name: 'r1', port: 3001 }], statsSocket: path.join(dir, 's.sock') }))
      assert.equal(checkHaproxyConfig(haproxy ?? '', file), undefined)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

interface Tally { statuses: Map<number, number>, failures: string[] }

/** A small steady client: GET /me and a login, over and over, until told to stop. */
async function clientLoop (url: string, email: string, token: string, stopped: () => boolean, tally: Tally): Promise<void> {
  const count = (status: number): void => { tally.statuses.set(status, (tally.statuses.get(status) ?? 0) + 1) }
  while (!stopped()) {
    const requests: Array<{ path: string, init: RequestInit }> = [
      { path: '/api/v1/me', init: { headers: { authorization: `Bearer ${token}` } } },
      { path: '/api/v1/auth/login', init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'correct horse battery' }) } },
    ]
    for (const request of requests) {
      try {
        const response = await fetch(`${url}${request.path}`, request.init)
        const body = await response.text()
        count(response.status)
        // The error's code says which part refused (SHUTTING_DOWN, SERVICE_OVERLOADED, HAProxy's own 503 ...).
        if (response.status >= 300) tally.failures.push(`${new Date().toISOString()} ${request.path}: ${response.status} ${body.slice(0, 200)}`)
      } catch (err) {
        tally.failures.push(`${new Date().toISOString()} ${request.path}: ${(err as Error).message} ${String((err as Error).cause ?? '')}`)
      }
    }
  }
}

describe('startReplicas: services behind HAProxy, each under a CPU quota', { skip: noHaproxy }, () => {
  let database: TestDatabase
  let set: ReplicaSet
  const quotaProbe = createCpuQuota(`tollbooth-probe-${process.pid}`, 0.5)
  if (quotaProbe.ok) quotaProbe.group.remove()

  before(async () => {
    database = await createTestDatabase({ migrate: false })
    set = await startReplicas({
      count: 2,
      cpusPerReplica: 0.5,
      databaseUrl: database.url,
      env: {
        ...process.env,
        TOLLBOOTH_JWT_SECRET: testJwtSecret,
        TOLLBOOTH_KEY_ENCRYPTION_KEY: testKeyEncryptionKey,
        TOLLBOOTH_PUBLIC_URL: 'http://127.0.0.1',
        TOLLBOOTH_LOG_LEVEL: 'info',
        TOLLBOOTH_HASH_ALGORITHM: 'bcrypt',
        TOLLBOOTH_BCRYPT_COST: '4',
        // Out of HAProxy's rotation within about 2 s (inter 1 s, fall 2): 3.5 s leaves slack.
        TOLLBOOTH_SHUTDOWN_DRAIN_MS: '3500',
        ...testAccountEnv,
      },
    })
  })
  after(async () => {
    await set?.stop()
    await database?.drop()
  })

  it('sizes each replica\'s hash pool to its quota (1 thread at 0.5 CPU), or says there is no quota', () => {
    assert.equal(set.replicas.length, 2)
    if (quotaProbe.ok) {
      assert.equal(set.quota, quotaProbe.group.kind)
      assert.equal(set.cpusPerReplica, 0.5)
      assert.deepEqual(set.warnings, [])
      for (const replica of set.replicas) {
        assert.equal(replica.hashThreads, 1, replica.name)
        assert.match(replica.cpuBudget ?? '', /^1 \(cgroup-v[12]\)$/)
      }
    } else {
      assert.equal(set.quota, 'none')
      assert.equal(set.cpusPerReplica, null)
      assert.match(set.warnings.join('\n'), /WITHOUT a CPU quota/)
    }
  })

  it('restarts each replica in turn under steady /me and login load without a failed request', async () => {
    const email = `rolling-${Date.now()}@example.com`
    const registered = await fetch(`${set.url}/api/v1/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'correct horse battery' }) })
    assert.equal(registered.status, 201)
    const { accessToken } = await registered.json() as { accessToken: string }

    let stopped = false
    const tally: Tally = { statuses: new Map(), failures: [] }
    const loops = Array.from({ length: 4 }, async () => { await clientLoop(set.url, email, accessToken, () => stopped, tally) })
    const pidsBefore = set.replicas.map((replica) => replica.pid)
    const restarts: string[] = []
    try {
      for (const replica of set.replicas) {
        restarts.push(`${new Date().toISOString()} restarting ${replica.name}`)
        await replica.restart()
        restarts.push(`${new Date().toISOString()} ${replica.name} back in HAProxy's rotation`)
      }
    } finally {
      stopped = true
      await Promise.all(loops)
    }
    assert.notDeepEqual(set.replicas.map((replica) => replica.pid), pidsBefore, 'new processes')
    assert.deepEqual(tally.failures, [], `the restarts: ${restarts.join('; ')}`)
    const served = tally.statuses.get(200) ?? 0
    assert.ok(served > 50, `requests served during the restarts: ${served}`)
    for (const replica of set.replicas) assert.equal(replica.hashThreads, quotaProbe.ok ? 1 : replica.hashThreads, 'the restarted replica is under its quota again')
  })
})
