import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { harnessEntry, startCli, stopCli, type StartedCli } from '../helpers/cli.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { request, serveEnv } from '../helpers/service.js'

/** The harness as the launcher starts it: libuv-128's pool size in the environment before node starts. */
async function startWithStrategy (db: TestDatabase, args: string[]): Promise<StartedCli> {
  const env = serveEnv(db.url)
  delete env.UV_THREADPOOL_SIZE
  if (args.includes('libuv-128')) env.UV_THREADPOOL_SIZE = '128'
  return await startCli(env, args, 30_000, harnessEntry)
}

async function metric (url: string, name: string): Promise<string | undefined> {
  const text = (await request({ url }, 'GET', '/metrics')).body as string
  return text.split('\n').find((line) => line.startsWith(name))
}

describe('the lab\'s harness: the service with each hash strategy', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })

  for (const strategy of ['event-loop', 'libuv', 'libuv-128', 'spawn', 'piscina', 'tollbooth']) {
    it(`--hash-strategy ${strategy} serves logins and says so in /metrics`, async () => {
      const started = await startWithStrategy(db, ['--hash-strategy', strategy])
      try {
        const account = { email: `${strategy}@example.com`, password: 'strategy password' }
        assert.equal((await request(started, 'POST', '/api/v1/auth/register', { body: account })).status, 201)
        assert.equal((await request(started, 'POST', '/api/v1/auth/login', { body: account })).status, 200)
        assert.match(await metric(started.url, 'tollbooth_hash_pool_info') ?? '', new RegExp(`strategy="${strategy}"`))
        if (strategy === 'libuv-128') {
          assert.equal(await metric(started.url, 'tollbooth_hash_pool_threads'), 'tollbooth_hash_pool_threads 128')
          // Not just reported: libuv sizes its pool when it first starts, and the process really has the threads.
          const threads = fs.readdirSync(`/proc/${started.child.pid ?? 0}/task`).length
          assert.ok(threads >= 128, `the service runs ${threads} threads`)
        }
        if (strategy === 'libuv') {
          assert.equal(await metric(started.url, 'tollbooth_hash_pool_threads'), 'tollbooth_hash_pool_threads 4')
          const threads = fs.readdirSync(`/proc/${started.child.pid ?? 0}/task`).length
          assert.ok(threads < 64, `libuv's default pool: the service runs ${threads} threads`)
        }
      } finally {
        assert.equal(await stopCli(started), 0)
      }
    })
  }

  describe('--hash-strategy cluster (one cluster, started once for these checks)', () => {
    let started: StartedCli
    before(async () => { started = await startWithStrategy(db, ['--hash-strategy', 'cluster', '--hash-threads', '2']) })
    after(async () => { assert.equal(await stopCli(started), 0, 'the cluster stops them all, cleanly') })

    it('--hash-strategy cluster forks one worker per CPU behind one port, and stops them all', async () => {
      const account = { email: 'cluster@example.com', password: 'cluster password' }
      assert.equal((await request(started, 'POST', '/api/v1/auth/register', { body: account })).status, 201)
      const logins = await Promise.all(Array.from({ length: 8 }, async () => await request(started, 'POST', '/api/v1/auth/login', { body: account })))
      assert.deepEqual(logins.map((r) => r.status), Array(8).fill(200))
      // A token from one worker is accepted by the others: they share the key.
      const me = await Promise.all(Array.from({ length: 6 }, async () => await request(started, 'GET', '/api/v1/me', { token: logins[0]?.body.accessToken })))
      assert.deepEqual(me.map((r) => r.status), Array(6).fill(200))
      assert.match(await metric(started.url, 'tollbooth_hash_pool_info') ?? '', /strategy="piscina"/)
      assert.match(await metric(started.url, 'tollbooth_info') ?? '', /strategy="cluster"/)
    })

    it('--hash-strategy cluster: /metrics aggregates every worker, whichever one answers', async () => {
      const workerPids = childPids(started.child.pid ?? 0)
      assert.equal(workerPids.length, 2, 'two worker processes')
      const account = { email: 'cluster-metrics@example.com', password: 'cluster password' }
      assert.equal((await request(started, 'POST', '/api/v1/auth/register', { body: account })).status, 201)
      // Each worker's own pool size, as that worker reports it.
      const perWorker = (await request(started, 'GET', '/readyz')).body.hashPool.threads as number
      for (let i = 0; i < 4; i++) {
        assert.equal(await metric(started.url, 'tollbooth_hash_pool_threads'), `tollbooth_hash_pool_threads ${2 * perWorker}`)
      }
      // Process CPU is the workers' sum. prom-client counts from when the metrics were created, so
      // compare growth: between two scrapes it lies within what the kernel saw between them, widened
      // by the scrapes themselves. One worker's share alone would be about half.
      const workersCpu = (): number => workerPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0)
      const scrapeCpu = async (): Promise<number> => Number((await metric(started.url, 'process_cpu_seconds_total '))?.split(' ')[1])
      const p1 = workersCpu()
      const v1 = await scrapeCpu()
      const p2 = workersCpu()
      await Promise.all(Array.from({ length: 300 }, async () => await request(started, 'POST', '/api/v1/auth/login', { body: account })))
      const p3 = workersCpu()
      const v2 = await scrapeCpu()
      const p4 = workersCpu()
      const tick = 2 * workerPids.length / clockTicksPerSecond
      assert.ok(p3 - p2 > 0.2, `the logins cost the workers ${(p3 - p2).toFixed(2)} s of CPU`)
      assert.ok(v2 - v1 >= p3 - p2 - tick && v2 - v1 <= p4 - p1 + tick,
        `process_cpu_seconds_total grew ${(v2 - v1).toFixed(3)} s; the workers used ${(p3 - p2).toFixed(2)}..${(p4 - p1).toFixed(2)} s`)
      // Labels that are the same in every worker appear once.
      const text = (await request(started, 'GET', '/metrics')).body as string
      assert.equal(text.split('\n').filter((line) => line.startsWith('tollbooth_info{')).length, 1)
    })
  })
})

/** Process ids whose parent is `pid`, from /proc. */
function childPids (pid: number): number[] {
  return fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).flatMap((entry) => {
    try {
      return statFields(Number(entry))[1] === String(pid) ? [Number(entry)] : []
    } catch {
      return []
    }
  })
}

/** /proc/<pid>/stat after the command name: [state, ppid, ...]; utime and stime are fields 11 and 12. */
function statFields (pid: number): string[] {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
}

/** The unit of utime and stime in /proc (USER_HZ), read from the system once. */
const clockTicksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())

function cpuSeconds (pid: number): number {
  const fields = statFields(pid)
  return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond
}
