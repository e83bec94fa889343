/**
 * HAProxy's limits on the capped requests (launcher/haproxy.ts, deploy/haproxy/haproxy.cfg): the
 * two configurations set the same, and a real HAProxy in front of a real service refuses past
 * the cap with tollbooth's own 503 (JSON body, Retry-After), while logins, /healthz and /readyz
 * pass uncapped. The cap is held full by a request whose body never ends (the service waits for
 * it at HAProxy's one place); every step waits on HAProxy's own counts, never on time.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { checkHaproxyConfig, haproxyBinary, haproxyConfig, haproxyOverloadAnswer, ownAdmissionPaths, recommendedHaproxyLimits, startHaproxy, type HaproxyLimits, type RunningHaproxy } from '../../src/launcher/haproxy.js'
import { startServe, type ServeProcess } from '../../src/launcher/index.js'
import { freePort } from '../../src/launcher/replicas.js'
import { packageRoot } from '../../src/paths.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { serveEnv } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

const haproxy = haproxyBinary()
const noHaproxy = haproxy === undefined ? 'haproxy is not installed (Debian package `haproxy`)' : false
const deployedConfig = fs.readFileSync(path.join(packageRoot, '..', '..', 'deploy', 'haproxy', 'haproxy.cfg'), 'utf8')

/** The lines of one section (`frontend api`, `backend tollbooth` ...), trimmed, comments left out. */
function section (config: string, header: string): string[] {
  const lines = config.split('\n')
  const start = lines.findIndex((line) => line.trim() === header)
  assert.notEqual(start, -1, `no "${header}" section`)
  const end = lines.findIndex((line, index) => index > start && /^\S/.test(line))
  return lines.slice(start + 1, end === -1 ? undefined : end).map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'))
}

/** An HAProxy duration in ms (`1s`, `500ms`; a bare number is ms). */
function durationMs (text: string): number {
  const [, value = '', unit = ''] = /^(\d+)(ms|s|m)?$/.exec(text) ?? []
  return Number(value) * ({ '': 1, ms: 1, s: 1000, m: 60_000 }[unit] ?? Number.NaN)
}

/** What a configuration sets for the capped requests, read back from its text. */
function cappedChoices (config: string): { limits: HaproxyLimits, doorAnswer: string, queueAnswer: string, ownAdmission: string[], reuse: string[] } {
  const frontend = section(config, 'frontend api')
  const backend = section(config, 'backend tollbooth')
  const matched = (lines: string[], pattern: RegExp, what: string): string => {
    const found = lines.map((line) => pattern.exec(line)?.[1]).find((value) => value !== undefined)
    assert.ok(found !== undefined, `${what}: no line matches ${String(pattern)}`)
    return found
  }
  return {
    limits: {
      maxConnPerReplica: Number(matched(backend, /^default-server .*\bmaxconn (\d+)/, 'maxconn')),
      queuePerReplica: Number(matched(frontend, /\{ avg_queue\(tollbooth\) gt (\d+) \}/, 'queue')),
      queueTimeoutMs: durationMs(matched(section(config, 'defaults'), /^timeout queue (\S+)$/, 'timeout queue')),
    },
    doorAnswer: matched(frontend, /^http-request return (.*) if capped /, 'the refusal at the door'),
    queueAnswer: matched(backend, /^http-error (.*)$/, 'the refusal after the queue'),
    ownAdmission: matched(frontend, /^acl own_admission path (.*)$/, 'own admission').split(' '),
    reuse: ['backend tollbooth', 'backend tollbooth_own_admission'].map((header) => matched(section(config, header), /^http-reuse (\S+)$/, `${header}: http-reuse`)),
  }
}

describe('HAProxy\'s limits on capped requests', () => {
  it('are the same in deploy/haproxy/haproxy.cfg and in the generated configuration: the recommended ones, tollbooth\'s own 503', () => {
    const generated = cappedChoices(haproxyConfig({ port: 8080, servers: [{ name: 'r1', port: 3001 }], statsSocket: '/tmp/x.sock' }))
    const deployed = cappedChoices(deployedConfig)
    assert.deepEqual(deployed, generated)
    assert.deepEqual(generated.limits, recommendedHaproxyLimits)
    assert.equal(generated.doorAnswer, haproxyOverloadAnswer())
    assert.equal(generated.queueAnswer, haproxyOverloadAnswer())
    assert.deepEqual(generated.ownAdmission, ownAdmissionPaths)
    assert.deepEqual(generated.reuse, ['always', 'always'])
  })

  it('keep idle connections to the replicas however many clients hold descriptors, in both configurations', () => {
    // Past `tune.pool-high-fd-ratio` (25 % by default) of its descriptors, HAProxy closes each
    // connection to a replica after its answer: a crowd of 4,000 clients halved a replica's goodput.
    const ratios = (config: string): Array<[string, number]> => [...config.matchAll(/^\s*tune\.pool-(high|low)-fd-ratio (\d+)/gm)].map((match) => [match[1] ?? '', Number(match[2])])
    const generated = ratios(haproxyConfig({ port: 8080, servers: [{ name: 'r1', port: 3001 }], statsSocket: '/tmp/x.sock' }))
    assert.deepEqual(generated, [['high', 95], ['low', 90]])
    assert.deepEqual(ratios(deployedConfig), generated)
  })

  it('are set as given in a valid configuration (haproxy -c)', { skip: noHaproxy }, () => {
    const limits = { maxConnPerReplica: 7, queuePerReplica: 5, queueTimeoutMs: 250 }
    const rateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-haproxy-test-'))
    try {
      const config = haproxyConfig({ port: 8080, servers: [{ name: 'r1', port: 3001 }, { name: 'r2', port: 3002 }], statsSocket: path.join(rateDir, 's.sock'), limits: { ...limits, ratePerReplica: 250 } })
      assert.match(config, /\{ var\(txn\.rate_per_replica\) -m int gt 250 \}/, 'the rate limit, per replica up')
      const file = path.join(rateDir, 'haproxy.cfg')
      fs.writeFileSync(file, config)
      assert.equal(checkHaproxyConfig(haproxy ?? '', file), undefined)
    } finally {
      fs.rmSync(rateDir, { recursive: true, force: true })
    }
    assert.doesNotMatch(haproxyConfig({ port: 8080, servers: [{ name: 'r1', port: 3001 }], statsSocket: '/tmp/x.sock', limits }), /rate_per_replica|stick-table/, 'no rate limit unless one is given')
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-haproxy-test-'))
    try {
      const config = haproxyConfig({ port: 8080, servers: [{ name: 'r1', port: 3001 }, { name: 'r2', port: 3002 }], statsSocket: path.join(dir, 's.sock'), limits })
      assert.deepEqual(cappedChoices(config).limits, limits)
      const file = path.join(dir, 'haproxy.cfg')
      fs.writeFileSync(file, config)
      assert.equal(checkHaproxyConfig(haproxy ?? '', file), undefined)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

/** A capped request (a POST that is not a login's) whose body never ends: it holds a place at the replica until destroyed. */
async function holdPlace (url: string, token: string): Promise<net.Socket> {
  const { hostname, port } = new URL(url)
  const socket = net.connect(Number(port), hostname)
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve).once('error', reject) })
  socket.on('error', () => {})
  socket.write(`POST /api/v1/posts HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"title":`)
  return socket
}

async function serverStats (balancer: RunningHaproxy): Promise<{ queued: number, current: number }> {
  return { queued: await balancer.queued(), current: (await balancer.serverStats()).get('r1')?.current ?? -1 }
}

/** Asserts tollbooth's own overload answer: 503, SERVICE_OVERLOADED in JSON, Retry-After. */
async function assertOverloadAnswer (response: Response, where: string): Promise<void> {
  assert.equal(response.status, 503, where)
  assert.equal(response.headers.get('retry-after'), '1', where)
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/, where)
  const body = await response.json() as { error: { code: string, message: string } }
  assert.equal(body.error.code, 'SERVICE_OVERLOADED', where)
  assert.equal(typeof body.error.message, 'string', where)
}

describe('a real HAProxy in front of a real service, at the cap', { skip: noHaproxy }, () => {
  let database: TestDatabase
  let service: ServeProcess
  let email: string
  let token: string
  const password = 'correct horse battery'
  const held: net.Socket[] = []
  const balancers: RunningHaproxy[] = []

  /** HAProxy with `limits` in front of the service, its one server up. */
  async function balancer (limits: HaproxyLimits): Promise<RunningHaproxy> {
    const { port } = new URL(service.url)
    const started = await startHaproxy({ port: await freePort(), servers: [{ name: 'r1', port: Number(port) }], limits })
    balancers.push(started)
    await started.waitFor(['r1'], true)
    return started
  }

  before(async () => {
    database = await createTestDatabase({ migrate: false })
    service = await startServe({ env: serveEnv(database.url) })
    email = `haproxy-cap-${Date.now()}@example.com`
    const registered = await fetch(`${service.url}/api/v1/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) })
    assert.equal(registered.status, 201)
    token = (await registered.json() as { accessToken: string }).accessToken
  })
  after(async () => {
    for (const socket of held) socket.destroy()
    for (const started of balancers) await started.stop()
    await service?.stop()
    await database?.drop()
  })

  it('refuses a capped request at the door once the queue is full, and passes logins, /healthz and /readyz', async () => {
    // One place at the replica, nothing may wait beyond one: the third capped request is refused at once.
    const front = await balancer({ maxConnPerReplica: 1, queuePerReplica: 0, queueTimeoutMs: 60_000 })
    held.push(await holdPlace(front.url, token))
    await waitFor('the held request at the replica', async () => (await serverStats(front)).current === 1)
    const me = { headers: { authorization: `Bearer ${token}` } }
    const queued = fetch(`${front.url}/api/v1/me`, me)
    await waitFor('a GET /me in HAProxy\'s queue', async () => (await serverStats(front)).queued === 1)

    await assertOverloadAnswer(await fetch(`${front.url}/api/v1/me`, me), 'past the queue')

    const login = await fetch(`${front.url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) })
    assert.equal(login.status, 200, await login.text())
    assert.equal((await fetch(`${front.url}/healthz`)).status, 200)
    assert.equal((await fetch(`${front.url}/readyz`)).status, 200)
    assert.deepEqual(await serverStats(front), { queued: 1, current: 1 }, 'the cap still full while those passed')

    // The place freed, the queued request is served.
    held.pop()?.destroy()
    assert.equal((await queued).status, 200)
  })

  it('with a rate limit, refuses the capped requests past it at the door and counts only those let through; logins and probes pass', async () => {
    const ratePerReplica = 3
    const front = await balancer({ ...recommendedHaproxyLimits, ratePerReplica })
    const me = { headers: { authorization: `Bearer ${token}` } }
    // Thirty at once: far more than three a second, whatever the machine's speed.
    const answers = await Promise.all(Array.from({ length: 30 }, async () => await fetch(`${front.url}/api/v1/me`, me)))
    const served = answers.filter((answer) => answer.status === 200)
    const refused = answers.filter((answer) => answer.status !== 200)
    assert.ok(served.length >= 1 && served.length <= 10, `served ${served.length} of 30 at a limit of ${ratePerReplica} a second`)
    for (const answer of served) await answer.body?.cancel()
    for (const answer of refused) await assertOverloadAnswer(answer, 'past the rate limit')
    const login = await fetch(`${front.url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) })
    assert.equal(login.status, 200, await login.text())
    assert.equal((await fetch(`${front.url}/healthz`)).status, 200)
    assert.equal((await fetch(`${front.url}/readyz`)).status, 200)
    // Refusals are not counted: once the second of those let through has passed, a request is served again.
    await waitFor('a GET /me served again', async () => {
      const answer = await fetch(`${front.url}/api/v1/me`, me)
      await answer.body?.cancel()
      return answer.status === 200
    }, { timeoutMs: 30_000, intervalMs: 250 })
  })

  it('refuses a capped request that waited past `timeout queue` with the same answer', async () => {
    const front = await balancer({ maxConnPerReplica: 1, queuePerReplica: 100, queueTimeoutMs: 300 })
    held.push(await holdPlace(front.url, token))
    await waitFor('the held request at the replica', async () => (await serverStats(front)).current === 1)
    await assertOverloadAnswer(await fetch(`${front.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } }), 'after the queue\'s timeout')
    held.pop()?.destroy()
  })
})
