import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import { after, before, describe, it } from 'node:test'
import { missingHashMallocEnv } from '../../src/machine/malloc-env.js'
import { startCli, stopCli, type StartedCli } from '../helpers/cli.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { childPids, listeningDescriptors } from '../helpers/processes.js'
import { request, serveEnv } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

async function startWorkers (db: TestDatabase, args: string[], env: NodeJS.ProcessEnv = {}): Promise<StartedCli> {
  return await startCli(serveEnv(db.url, env), ['serve', ...args], 60_000)
}

/** One request on a connection of its own (no keep-alive): whichever worker accepts first answers it. */
async function fresh (url: string, path: string): Promise<{ status: number, body: string }> {
  return await new Promise((resolve, reject) => {
    http.get(url + path, { agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, body }) })
    }).on('error', reject)
  })
}

/** `name{pid="..."} value` lines of the aggregated /metrics, by pid. */
async function perWorker (url: string, name: string): Promise<Map<number, number>> {
  const text = (await fresh(url, '/metrics')).body
  const byPid = new Map<number, number>()
  for (const match of text.matchAll(new RegExp(`^${name}\\{pid="(\\d+)"\\} (\\S+)$`, 'gm'))) byPid.set(Number(match[1]), Number(match[2]))
  return byPid
}

async function metricLine (url: string, name: string): Promise<string | undefined> {
  return (await fresh(url, '/metrics')).body.split('\n').find((line) => line.startsWith(name))
}

/**
 * Each worker in turn answers `count` fresh connections while the others are stopped (SIGSTOP), so
 * the kernel cannot give the connections to another: every worker serves the port, by construction
 * rather than by how the kernel happens to spread connections over the workers' accept calls.
 */
async function answersAlone (url: string, workers: number[], count: number): Promise<void> {
  for (const worker of workers) {
    const others = workers.filter((pid) => pid !== worker)
    for (const pid of others) process.kill(pid, 'SIGSTOP')
    try {
      for (let i = 0; i < count; i++) assert.equal((await fresh(url, '/healthz')).status, 200)
    } finally {
      for (const pid of others) process.kill(pid, 'SIGCONT')
    }
  }
}

describe('tollbooth serve --workers N', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })

  // One cluster for these three checks, in this order: it serves, loses a worker and replaces it,
  // then drains on SIGTERM and exits (a cluster start is three processes; one is enough for all three).
  describe('two workers on a budget of 2, one cluster', () => {
    const drainMs = 3000
    let started: StartedCli
    before(async () => { started = await startWorkers(db, ['--workers', '2', '--hash-threads', '2'], { TOLLBOOTH_SHUTDOWN_DRAIN_MS: String(drainMs) }) })
    // Stopped by the SIGTERM check; this is for a run where an earlier check failed.
    after(async () => { await stopCli(started) })

    it('--workers 2 on a budget of 2: two processes answer on one port, each with tollbooth\'s pool of 1 hash thread', async () => {
      const primary = started.pid
      const workers = childPids(primary)
      assert.equal(workers.length, 2, 'two worker processes under the primary')
      // Each worker accepts for itself (SCHED_NONE), through 16 descriptors of the one socket; the primary keeps one.
      const port = Number(new URL(started.url).port)
      for (const worker of workers) assert.equal(listeningDescriptors(worker, port), 16, `worker ${worker}'s listening descriptors`)
      assert.equal(listeningDescriptors(primary, port), 1)
      await answersAlone(started.url, workers, 4)
      // The primary was started without glibc's malloc settings for hashing; its workers have them (where glibc takes them).
      const added = missingHashMallocEnv(serveEnv(db.url))
      for (const worker of workers) {
        const environment = fs.readFileSync(`/proc/${worker}/environ`, 'utf8').split('\0')
        for (const [name, value] of Object.entries(added)) assert.ok(environment.includes(`${name}=${value}`), `worker ${worker} has ${name}`)
      }
      // Which process answered: the per-worker series of /metrics, labelled by pid.
      const answered = await perWorker(started.url, 'tollbooth_worker_http_requests_total')
      assert.deepEqual([...answered.keys()].sort(), [...workers].sort(), 'both workers answered')
      for (const [pid, count] of answered) assert.ok(count >= 4, `worker ${pid} answered ${count} requests`)
      const threads = await perWorker(started.url, 'tollbooth_worker_hash_pool_threads')
      assert.deepEqual([...threads.values()], [1, 1], 'one hash thread in each worker')
      assert.equal(await metricLine(started.url, 'tollbooth_hash_pool_threads '), 'tollbooth_hash_pool_threads 2')
      // tollbooth's own pool, not the cluster strategy's plain Piscina.
      assert.match(await metricLine(started.url, 'tollbooth_hash_pool_info') ?? '', /strategy="tollbooth"/)
      const listening = started.lines().find((line) => line.msg === 'tollbooth is listening')
      assert.equal(listening?.threadsPerWorker, 1)
      assert.equal(listening?.workers, 2)

      // The service works across them: a token from one worker is accepted by every one.
      const account = { email: 'workers@example.com', password: 'workers password' }
      const registered = await request(started, 'POST', '/api/v1/auth/register', { body: account })
      assert.equal(registered.status, 201)
      const token = registered.body.accessToken as string
      const me = await Promise.all(Array.from({ length: 6 }, async () => await new Promise<number>((resolve, reject) => {
        http.get(started.url + '/api/v1/me', { agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => { res.resume(); resolve(res.statusCode ?? 0) }).on('error', reject)
      })))
      assert.deepEqual(me, Array(6).fill(200))
    })

    it('a worker that dies is replaced, with a log line, and the port keeps answering', async () => {
      const primary = started.pid
      const [victim, survivor] = childPids(primary)
      assert.ok(victim !== undefined && survivor !== undefined)
      process.kill(victim, 'SIGKILL')
      await waitFor('the replacement', () => started.lines().some((line) => line.msg === 'replacement cluster worker listening'), { timeoutMs: 30_000 })
      const died = started.lines().find((line) => line.msg === 'cluster worker died: starting a replacement')
      assert.equal(died?.pid, victim)
      assert.equal(died?.signal, 'SIGKILL')
      const now = childPids(primary)
      assert.equal(now.length, 2)
      assert.ok(now.includes(survivor) && !now.includes(victim))
      await answersAlone(started.url, now, 3)
      const answered = await perWorker(started.url, 'tollbooth_worker_http_requests_total')
      assert.deepEqual([...answered.keys()].sort(), [...now].sort(), 'the replacement answers too')
    })

    it('SIGTERM to the primary drains every worker, the replacement included (/readyz 503 at once, still serving), then exits 0', async () => {
      const exited = new Promise<number | null>((resolve) => started.child.once('exit', (code) => { resolve(code) }))
      for (let i = 0; i < 4; i++) assert.equal((await fresh(started.url, '/readyz')).status, 200)
      const signalledAt = Date.now()
      started.child.kill('SIGTERM')
      // The primary tells the workers over IPC; each turns readiness off as soon as it reads it.
      await waitFor('a draining /readyz', async () => (await fresh(started.url, '/readyz')).status === 503, { timeoutMs: drainMs })
      // Four fresh connections, whichever worker takes them: both are draining, and still serve the rest.
      const readyz = await Promise.all(Array.from({ length: 4 }, async () => (await fresh(started.url, '/readyz')).status))
      const healthz = await Promise.all(Array.from({ length: 4 }, async () => (await fresh(started.url, '/healthz')).status))
      assert.ok(Date.now() - signalledAt < drainMs, 'checked within the drain')
      assert.deepEqual(readyz, [503, 503, 503, 503])
      assert.deepEqual(healthz, [200, 200, 200, 200])
      assert.equal(await exited, 0)
      assert.ok(Date.now() - signalledAt >= drainMs - 100, `exited ${Date.now() - signalledAt} ms after SIGTERM, after the drain`)
      assert.deepEqual(childPids(started.pid), [], 'no worker left')
    })
  })

  it('more workers than the budget: one thread each, and a warning that the pool is oversubscribed', async () => {
    const started = await startWorkers(db, ['--workers', '3', '--hash-threads', '2'])
    try {
      const warning = started.lines().find((line) => line.level === 40 && String(line.msg).includes('oversubscribed'))
      assert.ok(warning !== undefined, 'warned')
      assert.equal(childPids(started.pid).length, 3)
      assert.equal(await metricLine(started.url, 'tollbooth_hash_pool_threads '), 'tollbooth_hash_pool_threads 3')
    } finally {
      assert.equal(await stopCli(started), 0)
    }
  })
})
