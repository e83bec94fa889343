/**
 * `npm run bench:cheap`: what a cheap request costs in tollbooth, against a bare
 * Fastify + pg server doing the same work (bench/bare-me-server.ts: JWT verify +
 * SELECT of the user), in the same run, on the same PostgreSQL.
 *
 * Starts an embedded PostgreSQL (a scratch folder), registers accounts through
 * tollbooth for their access tokens (not counted), then loads each target in
 * turn with the same closed-loop client (`--connections` clients sending
 * `GET /api/v1/me` back to back for `--duration` seconds):
 *
 *   tollbooth          the service as it ships (bin/tollbooth.js serve)
 *   bare               Fastify + pg, nothing else
 *   tollbooth refusing the service with TOLLBOOTH_MAX_IN_FLIGHT=1: nearly every
 *                      request is shed (503), so the cost of a refusal shows
 *
 * and reports requests/s and CPU per request of each, split by thread from
 * /proc/<pid>/task/<tid>/stat (ticks of `getconf CLK_TCK`): the service's main
 * thread, its other threads, PostgreSQL (the postmaster and its backends), and
 * the load generator (this process). Then it runs tollbooth once more under
 * `node --cpu-prof` with the same load and summarises the main thread's
 * profile: the functions and modules with the most self time.
 *
 *   npm run bench:cheap
 *   npm run bench:cheap -- --duration 15 --connections 64 --rounds 2 --json out.json
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import hdr from 'hdr-histogram-js'
import { Pool } from 'undici'
import { scratchClusterDir, startEmbeddedPostgres } from '../src/db/embedded/embedded.js'
import { migrate } from '../src/db/migrate.js'
import { createDatabasePool } from '../src/db/pool.js'
import { detectCpuBudget } from '../src/hashing/index.js'
import { packageRoot } from '../src/paths.js'
import { summariseProfile, type CpuProfile, type ProfileSummary } from './profile-summary.js'

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '64' },
    accounts: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '1' },
    'profile-duration': { type: 'string' },
    top: { type: 'string', default: '15' },
    json: { type: 'string' },
  },
})
const durationMs = Number(args.duration) * 1000
const connections = Number(args.connections)
const clockTicksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())

// ---------------------------------------------------------------- CPU from /proc

/** utime + stime of a /proc stat line, in seconds (the fields after the command name, which may hold spaces). */
function statCpuSeconds (statPath: string): number {
  const stat = fs.readFileSync(statPath, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond
}

interface ProcessCpu {
  /** The whole process, exited threads included. */
  total: number
  /** The main thread (tid = pid). */
  main: number
}

function processCpu (pid: number): ProcessCpu {
  return { total: statCpuSeconds(`/proc/${pid}/stat`), main: statCpuSeconds(`/proc/${pid}/task/${pid}/stat`) }
}

/** CPU seconds so far of the PostgreSQL cluster in `dataDir`: its postmaster and the postmaster's children. */
function postgresCpuSeconds (dataDir: string): number {
  const stats = new Map<number, { ppid: number, ticks: number, cmdline: string }>()
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      stats.set(Number(entry), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), cmdline: fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8') })
    } catch {} // the process exited between the listing and the read
  }
  const postmaster = [...stats.entries()].find(([, s]) => s.cmdline.includes(dataDir))?.[0]
  if (postmaster === undefined) return 0
  let ticks = 0
  for (const [pid, s] of stats) if (pid === postmaster || s.ppid === postmaster) ticks += s.ticks
  return ticks / clockTicksPerSecond
}

// ---------------------------------------------------------------- the servers

interface Server { name: string, url: string, child: ChildProcess }

async function spawnServer (name: string, command: string[], env: NodeJS.ProcessEnv, urlOf: (line: string) => string | undefined): Promise<Server> {
  const child = spawn(process.execPath, command, { env, stdio: ['ignore', 'pipe', 'inherit'], cwd: packageRoot })
  let buffered = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString()
      const lines = buffered.split('\n')
      buffered = lines.pop() ?? ''
      for (const line of lines) {
        const found = urlOf(line)
        if (found !== undefined) resolve(found)
      }
    })
    child.once('exit', (code) => { reject(new Error(`${name} exited with ${String(code)} before listening`)) })
  })
  // Keep draining its output (a full pipe would block the server), without looking at it.
  child.stdout?.removeAllListeners('data')
  child.stdout?.resume()
  return { name, url, child }
}

async function stopServer (server: Server): Promise<void> {
  if (server.child.exitCode !== null) return
  const exited = new Promise((resolve) => server.child.once('exit', resolve))
  server.child.kill('SIGTERM')
  await exited
}

function tollboothUrl (line: string): string | undefined {
  try {
    const entry = JSON.parse(line) as { msg?: string, url?: string }
    return entry.msg === 'tollbooth is listening' ? entry.url : undefined
  } catch {
    return undefined
  }
}

async function startTollbooth (databaseUrl: string, jwtSecret: string, env: Record<string, string> = {}, nodeFlags: string[] = []): Promise<Server> {
  return await spawnServer('tollbooth', [...nodeFlags, path.join(packageRoot, 'bin', 'tollbooth.js'), 'serve'], {
    ...process.env,
    DATABASE_URL: databaseUrl,
    TOLLBOOTH_JWT_SECRET: jwtSecret,
    // HS256 as the bare server: the comparison is of everything around the token check.
    TOLLBOOTH_JWT_ALGORITHM: 'HS256',
    HOST: '127.0.0.1',
    PORT: '0',
    TOLLBOOTH_LOG_LEVEL: 'info',
    // Registration in setup only: a light hash keeps it quick; GET /me never hashes.
    TOLLBOOTH_ARGON2_MEMORY_KIB: '1024',
    TOLLBOOTH_ARGON2_TIME_COST: '1',
    ...env,
  }, tollboothUrl)
}

async function startBare (databaseUrl: string, jwtSecret: string): Promise<Server> {
  return await spawnServer('bare', [path.join(packageRoot, 'dist', 'bench', 'bare-me-server.js')], {
    ...process.env, DATABASE_URL: databaseUrl, JWT_SECRET: jwtSecret, DB_POOL_SIZE: '10',
  }, (line) => line.startsWith('listening ') ? line.slice('listening '.length).trim() : undefined)
}

// ---------------------------------------------------------------- the load

interface LoadResult {
  requests: number
  ok: number
  refused: number
  other: number
  seconds: number
  p50Ms: number
  p99Ms: number
}

/** `connections` closed-loop clients sending GET /api/v1/me back to back for `ms`. */
async function load (url: string, tokens: readonly string[], ms: number): Promise<LoadResult> {
  const pool = new Pool(url, { connections, pipelining: 1 })
  const latency = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 })
  let ok = 0
  let refused = 0
  let other = 0
  let next = 0
  const started = performance.now()
  const endAt = started + ms
  try {
    await Promise.all(Array.from({ length: connections }, async () => {
      while (performance.now() < endAt) {
        const token = tokens[next++ % tokens.length] ?? ''
        const sent = performance.now()
        const response = await pool.request({ method: 'GET', path: '/api/v1/me', headers: { authorization: `Bearer ${token}` } })
        await response.body.dump()
        latency.recordValue(Math.round((performance.now() - sent) * 1000))
        if (response.statusCode === 200) ok++
        else if (response.statusCode === 503) refused++
        else other++
      }
    }))
    return { requests: ok + refused + other, ok, refused, other, seconds: (performance.now() - started) / 1000, p50Ms: latency.getValueAtPercentile(50) / 1000, p99Ms: latency.getValueAtPercentile(99) / 1000 }
  } finally {
    latency.destroy()
    await pool.close()
  }
}

interface Measured extends LoadResult {
  target: string
  perSecond: number
  /** CPU ms per request, by where it ran. */
  cpuMsPerRequest: { service: number, mainThread: number, otherThreads: number, postgres: number, loadGenerator: number }
}

async function measure (target: string, server: Server, tokens: readonly string[], pgDataDir: string): Promise<Measured> {
  const pid = server.child.pid ?? 0
  // A short warm-up: JIT, the database pool's connections, the verifier's cache.
  await load(server.url, tokens, Math.min(2000, durationMs / 4))
  const before = processCpu(pid)
  const pgBefore = postgresCpuSeconds(pgDataDir)
  const clientBefore = process.cpuUsage()
  const result = await load(server.url, tokens, durationMs)
  const client = process.cpuUsage(clientBefore)
  const after = processCpu(pid)
  const pgSeconds = postgresCpuSeconds(pgDataDir) - pgBefore
  const per = (seconds: number): number => (seconds * 1000) / Math.max(1, result.requests)
  return {
    target,
    ...result,
    perSecond: result.requests / result.seconds,
    cpuMsPerRequest: {
      service: per(after.total - before.total),
      mainThread: per(after.main - before.main),
      otherThreads: per((after.total - before.total) - (after.main - before.main)),
      postgres: per(pgSeconds),
      loadGenerator: per((client.user + client.system) / 1e6),
    },
  }
}

// ---------------------------------------------------------------- the profile

/** Runs tollbooth under `node --cpu-prof` with the same load, and summarises its main thread's profile. */
async function profileTollbooth (databaseUrl: string, jwtSecret: string, tokens: readonly string[], ms: number): Promise<ProfileSummary & { requests: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-cpu-prof-'))
  try {
    const server = await startTollbooth(databaseUrl, jwtSecret, {}, ['--cpu-prof', `--cpu-prof-dir=${dir}`])
    let result: LoadResult
    try {
      result = await load(server.url, tokens, ms)
    } finally {
      await stopServer(server)
    }
    // CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile; thread 0 is the main thread (the others are hash workers).
    const main = fs.readdirSync(dir).find((file) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(file))
    if (main === undefined) throw new Error(`no main-thread profile in ${dir}: ${fs.readdirSync(dir).join(', ')}`)
    const profile = JSON.parse(fs.readFileSync(path.join(dir, main), 'utf8')) as CpuProfile
    return { ...summariseProfile(profile, Number(args.top)), requests: result.requests }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------- output

function f (n: number, digits = 1): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

function printMeasured (m: Measured): void {
  const cpu = m.cpuMsPerRequest
  process.stdout.write(`${m.target.padEnd(20)} ${f(m.perSecond, 0).padStart(7)} req/s  ` +
    `${m.ok} ok, ${m.refused} x 503, ${m.other} other  p50 ${f(m.p50Ms, 2)} ms, p99 ${f(m.p99Ms, 2)} ms\n` +
    `${''.padEnd(20)} CPU per request: service ${f(cpu.service * 1000, 0)} us (main thread ${f(cpu.mainThread * 1000, 0)} us, other threads ${f(cpu.otherThreads * 1000, 0)} us), ` +
    `PostgreSQL ${f(cpu.postgres * 1000, 0)} us, load generator ${f(cpu.loadGenerator * 1000, 0)} us\n`)
}

async function main (): Promise<void> {
  const cpuModel = os.cpus()[0]?.model ?? 'unknown CPU'
  const budget = detectCpuBudget()
  process.stdout.write(`# cheap request: ${cpuModel}, ${os.cpus().length} cores, CPU budget ${budget.cpus} (${budget.source}), Node ${process.version}, CLK_TCK ${clockTicksPerSecond}\n`)
  process.stdout.write(`# ${connections} closed-loop clients, ${durationMs / 1000} s per target, GET /api/v1/me\n\n`)

  const clusterDir = scratchClusterDir('bench-cheap')
  const database = await startEmbeddedPostgres({ clusterDir, databaseName: 'tollbooth_bench' })
  const jwtSecret = randomBytes(32).toString('base64url')
  const results: Measured[] = []
  let profile: (ProfileSummary & { requests: number }) | undefined
  try {
    const migrations = createDatabasePool(database.url, 2)
    await migrate(migrations)
    await migrations.end()

    // Setup, not counted: accounts and their access tokens, through tollbooth's own API.
    const tokens: string[] = []
    {
      const server = await startTollbooth(database.url, jwtSecret)
      const pool = new Pool(server.url, { connections: 4 })
      try {
        for (let i = 0; i < Number(args.accounts); i++) {
          for (let attempt = 1; ; attempt++) {
            const response = await pool.request({
              method: 'POST',
              path: '/api/v1/auth/register',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ email: `cheap-${i}-${process.pid}@example.com`, password: `cheap request ${i}` }),
            })
            const body = await response.body.json() as { accessToken?: string }
            // Refused at once while the service warms up on a busy machine: wait as told, then again.
            if (response.statusCode === 503 && attempt < 20) {
              await new Promise((resolve) => setTimeout(resolve, Number(response.headers['retry-after'] ?? '1') * 1000))
              continue
            }
            if (response.statusCode !== 201 || body.accessToken === undefined) throw new Error(`registration failed with ${response.statusCode}: ${JSON.stringify(body)}`)
            tokens.push(body.accessToken)
            break
          }
        }
      } finally {
        await pool.close()
        await stopServer(server)
      }
    }

    for (let round = 1; round <= Number(args.rounds); round++) {
      if (Number(args.rounds) > 1) process.stdout.write(`## round ${round}\n`)
      const targets: Array<[string, () => Promise<Server>]> = [
        ['tollbooth', async () => await startTollbooth(database.url, jwtSecret)],
        ['bare', async () => await startBare(database.url, jwtSecret)],
        // Every request past the first in flight is shed: the cost of a refusal.
        ['tollbooth refusing', async () => await startTollbooth(database.url, jwtSecret, { TOLLBOOTH_MAX_IN_FLIGHT: '1', TOLLBOOTH_MAX_EVENT_LOOP_DELAY_MS: '0' })],
      ]
      for (const [target, start] of targets) {
        const server = await start()
        try {
          const measured = await measure(target, server, tokens, database.dataDir)
          printMeasured(measured)
          results.push(measured)
        } finally {
          await stopServer(server)
        }
      }
      process.stdout.write('\n')
    }

    const mean = (target: string, pick: (m: Measured) => number): number => {
      const of = results.filter((m) => m.target === target)
      return of.reduce((sum, m) => sum + pick(m), 0) / Math.max(1, of.length)
    }
    const served = mean('tollbooth', (m) => m.cpuMsPerRequest.service)
    const bare = mean('bare', (m) => m.cpuMsPerRequest.service)
    // In the refusing run a few requests were served; their cost (from the served run) comes off.
    const refusingRuns = results.filter((m) => m.target === 'tollbooth refusing')
    const perRefusal = refusingRuns.reduce((sum, m) => sum + Math.max(0, (m.cpuMsPerRequest.service * m.requests - served * m.ok) / Math.max(1, m.refused)), 0) / Math.max(1, refusingRuns.length)
    process.stdout.write([
      `tollbooth / bare, requests/s                ${f(mean('tollbooth', (m) => m.perSecond) / Math.max(1, mean('bare', (m) => m.perSecond)), 2)}`,
      `tollbooth / bare, service CPU per request    ${f(served / Math.max(1e-9, bare), 2)} (${f(served * 1000, 0)} us / ${f(bare * 1000, 0)} us)`,
      `a refusal / a served request, service CPU    ${f(perRefusal / Math.max(1e-9, served), 2)} (${f(perRefusal * 1000, 0)} us / ${f(served * 1000, 0)} us)`,
      '',
    ].join('\n') + '\n')

    const profileMs = Number(args['profile-duration'] ?? args.duration) * 1000
    profile = await profileTollbooth(database.url, jwtSecret, tokens, profileMs)
    process.stdout.write(`## tollbooth under --cpu-prof (${profile.requests} requests in ${profileMs / 1000} s): main thread busy ${f(profile.busyMs, 0)} ms, idle ${f(profile.idleMs, 0)} ms\n`)
    process.stdout.write('\nself time by module (of the busy time)\n')
    for (const entry of profile.modules) process.stdout.write(`  ${f(entry.share * 100).padStart(5)} %  ${f(entry.ms, 0).padStart(7)} ms  ${entry.name}\n`)
    process.stdout.write('\nself time by function\n')
    for (const entry of profile.functions) process.stdout.write(`  ${f(entry.share * 100).padStart(5)} %  ${f(entry.ms, 0).padStart(7)} ms  ${entry.name}\n`)
  } finally {
    await database.stop()
    fs.rmSync(path.dirname(clusterDir), { recursive: true, force: true })
  }
  if (args.json !== undefined) {
    fs.writeFileSync(args.json, JSON.stringify({ machine: { cpu: cpuModel, cores: os.cpus().length, budget, node: process.version, clockTicksPerSecond }, connections, durationMs, results, profile }, null, 2))
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:cheap: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
