/**
 * `npm run bench:login`: a login storm against a running tollbooth.
 *
 * Starts the service as its own process (embedded PostgreSQL in a scratch
 * folder) unless --target is given, pre-registers accounts (not counted), then
 * for --duration runs --concurrency closed-loop clients that log in over and
 * over, while probing /healthz every 20 ms. It measures, in the same run, the
 * single-thread verify time of the same policy (idle machine, before the storm),
 * so "physical limit = threads / verify time" and the ratio achieved/limit are
 * comparisons inside one run, not against a number from another day.
 *
 *   npm run bench:login                                  # both profiles below
 *   npm run bench:login -- --profile bcrypt10            # bcrypt cost 10 (the seeds')
 *   npm run bench:login -- --profile argon2-light        # argon2id m=7168 t=5 p=1
 *   npm run bench:login -- --target http://127.0.0.1:3000 --pid 12345 --profile argon2-light
 *
 * CPU per login is split by thread, from /proc: the hash threads (the pool's N
 * busiest threads besides the main one; Node 20 does not name its threads, so
 * they are told apart by elimination and by work), the rest of the service (the
 * main thread and the V8/libuv helper threads), PostgreSQL and the load
 * generator. Kernel CPU time, not the workers' wall-clock run time, which also
 * counts time a hash thread waited for a core.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import hdr from 'hdr-histogram-js'
import { Pool } from 'undici'
import { scratchClusterDir } from '../src/db/embedded.js'
import { createPasswordEngine, detectCpuBudget } from '../src/hashing/index.js'
import type { HashPolicy } from '../src/hashing/types.js'
import { packageRoot } from '../src/paths.js'

interface Profile {
  name: string
  env: Record<string, string>
  policy: HashPolicy
}

const basePolicy: HashPolicy = {
  algorithm: 'argon2id',
  argon2: { memoryKiB: 19456, timeCost: 2, parallelism: 1 },
  bcrypt: { cost: 10 },
  scrypt: { N: 32768, r: 8, p: 1 },
}

const profiles: Record<string, Profile> = {
  bcrypt10: {
    name: 'bcrypt cost 10 (the seed articles)',
    env: { TOLLBOOTH_HASH_ALGORITHM: 'bcrypt', TOLLBOOTH_BCRYPT_COST: '10' },
    policy: { ...basePolicy, algorithm: 'bcrypt' },
  },
  'argon2-light': {
    name: 'argon2id m=7168 t=5 p=1',
    env: { TOLLBOOTH_HASH_ALGORITHM: 'argon2id', TOLLBOOTH_ARGON2_MEMORY_KIB: '7168', TOLLBOOTH_ARGON2_TIME_COST: '5', TOLLBOOTH_ARGON2_PARALLELISM: '1' },
    policy: { ...basePolicy, argon2: { memoryKiB: 7168, timeCost: 5, parallelism: 1 } },
  },
  'argon2-min': {
    name: 'argon2id m=1024 t=1 p=1 (a near-free hash: the service\'s own per-login cost)',
    env: { TOLLBOOTH_HASH_ALGORITHM: 'argon2id', TOLLBOOTH_ARGON2_MEMORY_KIB: '1024', TOLLBOOTH_ARGON2_TIME_COST: '1', TOLLBOOTH_ARGON2_PARALLELISM: '1' },
    policy: { ...basePolicy, argon2: { memoryKiB: 1024, timeCost: 1, parallelism: 1 } },
  },
  'argon2-owasp': {
    name: 'argon2id m=19456 t=2 p=1 (OWASP, the default)',
    env: { TOLLBOOTH_HASH_ALGORITHM: 'argon2id' },
    policy: basePolicy,
  },
}

const { values: args } = parseArgs({
  options: {
    profile: { type: 'string', multiple: true },
    target: { type: 'string' },
    pid: { type: 'string' },
    duration: { type: 'string', default: '15' },
    concurrency: { type: 'string', default: '32' },
    accounts: { type: 'string', default: '50' },
    'deadline-ms': { type: 'string', default: '2000' },
    json: { type: 'string' },
  },
})

function percentile (histogram: hdr.Histogram, p: number): number {
  return histogram.getValueAtPercentile(p) / 1000
}

async function startService (profile: Profile): Promise<{ url: string, child: ChildProcess, dataDir: string }> {
  const dataDir = path.dirname(scratchClusterDir('bench'))
  const env: NodeJS.ProcessEnv = { ...process.env, ...profile.env, PORT: '0', TOLLBOOTH_DATA_DIR: dataDir, TOLLBOOTH_LOG_LEVEL: 'warn', TOLLBOOTH_LOGIN_DEADLINE_MS: args['deadline-ms'] }
  delete env.DATABASE_URL
  const child = spawn(process.execPath, [path.join(packageRoot, 'bin', 'tollbooth.js')], { env: { ...env, TOLLBOOTH_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'inherit'] })
  let buffered = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString()
      for (const line of buffered.split('\n')) {
        try {
          const entry = JSON.parse(line) as { msg?: string, url?: string }
          if (entry.msg === 'tollbooth is listening' && entry.url !== undefined) resolve(entry.url)
        } catch {}
      }
    })
    child.once('exit', (code) => { reject(new Error(`service exited with ${code}:\n${buffered}`)) })
  })
  child.stdout?.removeAllListeners('data')
  child.stdout?.resume()
  return { url, child, dataDir }
}

async function post (pool: Pool, route: string, body: unknown): Promise<{ status: number, retryAfter: string | undefined }> {
  const response = await pool.request({ method: 'POST', path: route, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  await response.body.dump()
  const retryAfter = response.headers['retry-after']
  return { status: response.statusCode, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter }
}

async function metricValue (pool: Pool, name: string): Promise<number | undefined> {
  const response = await pool.request({ method: 'GET', path: '/metrics' })
  const text = await response.body.text()
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
  return line === undefined ? undefined : Number(line.split(' ').pop())
}

interface ServerSnapshot { hashRunSeconds: number, hashWaitSeconds: number, hashCount: number }

async function serverSnapshot (pool: Pool): Promise<ServerSnapshot> {
  return {
    hashRunSeconds: await metricValue(pool, 'tollbooth_hash_run_seconds_sum{kind="verify"}') ?? 0,
    hashWaitSeconds: await metricValue(pool, 'tollbooth_hash_wait_seconds_sum{kind="verify"}') ?? 0,
    hashCount: await metricValue(pool, 'tollbooth_hash_run_seconds_count{kind="verify"}') ?? 0,
  }
}

const userHz = 100

/** utime + stime of a /proc stat line, in seconds (the fields after the command name, which may hold spaces). */
function statCpuSeconds (statPath: string): number {
  const stat = fs.readFileSync(statPath, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / userHz
}

interface ThreadCpu {
  /** The whole process, exited threads included. */
  process: number
  /** Per live thread id. */
  threads: Map<number, number>
}

function threadCpu (pid: number): ThreadCpu {
  const threads = new Map<number, number>()
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      threads.set(Number(tid), statCpuSeconds(`/proc/${pid}/task/${tid}/stat`))
    } catch {} // the thread exited between the listing and the read
  }
  return { process: statCpuSeconds(`/proc/${pid}/stat`), threads }
}

interface ServiceCpuSplit { hashThreads: number, mainThread: number, otherThreads: number }

/**
 * The service's CPU between two snapshots, by thread. The hash threads are the `hashThreads`
 * busiest threads other than the main one (tid = pid): Node 20 gives worker threads no name,
 * and during a login storm nothing else off the main thread works as hard as they do.
 */
function splitServiceCpu (pid: number, before: ThreadCpu, after: ThreadCpu, hashThreads: number): ServiceCpuSplit {
  const deltas = [...after.threads].map(([tid, seconds]) => ({ tid, seconds: seconds - (before.threads.get(tid) ?? 0) }))
  const mainThread = deltas.find((d) => d.tid === pid)?.seconds ?? 0
  const others = deltas.filter((d) => d.tid !== pid).sort((a, b) => b.seconds - a.seconds)
  const hash = others.slice(0, hashThreads).reduce((sum, d) => sum + d.seconds, 0)
  return { hashThreads: hash, mainThread, otherThreads: Math.max(0, after.process - before.process - hash - mainThread) }
}

/** CPU seconds used so far by the PostgreSQL cluster in `dataDir` (postmaster and its backends), from /proc. */
function postgresCpuSeconds (dataDir: string | undefined): number {
  if (dataDir === undefined || !fs.existsSync('/proc')) return 0
  const stats = new Map<number, { ppid: number, ticks: number, cmdline: string }>()
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      stats.set(Number(entry), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), cmdline: fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8') })
    } catch {}
  }
  const postmaster = [...stats.entries()].find(([, s]) => s.cmdline.includes(dataDir))?.[0]
  if (postmaster === undefined) return 0
  let ticks = 0
  for (const [pid, s] of stats) if (pid === postmaster || s.ppid === postmaster) ticks += s.ticks
  return ticks / 100 // USER_HZ
}

/** Median single-thread verify time of the policy, on one worker thread, machine otherwise idle. */
async function singleThreadVerifyMs (policy: HashPolicy, samples = 30): Promise<number> {
  const engine = await createPasswordEngine({ policy, threads: 1 })
  try {
    const stored = await engine.hash('bench password 1')
    const times: number[] = []
    for (let i = 0; i < samples; i++) {
      const started = performance.now()
      await engine.verify('bench password 1', stored)
      times.push(performance.now() - started)
    }
    times.sort((a, b) => a - b)
    return times[Math.floor(times.length / 2)] ?? 0
  } finally {
    await engine.close()
  }
}

interface StormResult {
  profile: string
  threads: number
  verifyMs: number
  physicalLimitPerSecond: number
  achievedPerSecond: number
  ratio: number
  loginP50Ms: number
  loginP95Ms: number
  loginP99Ms: number
  healthzP99Ms: number
  healthzMaxMs: number
  /** Mean verify time measured inside the workers during the storm. */
  verifyUnderLoadMs: number
  /** Share of the hash threads' time spent hashing during the storm (wall-clock, from the workers). */
  hashThreadBusy: number
  /** CPU time per login by where it ran; undefined entries could not be measured (no pid, no /proc). */
  cpuMsPerLogin: {
    /** Kernel CPU time of the hash threads. */
    hashThreads: number | undefined
    /** The workers' own wall-clock measure of the hashes, for comparison: above hashThreads when threads waited for a core. */
    hashWallClock: number
    /** Everything else in the service process: the main thread and the helper threads. */
    serviceOther: number | undefined
    mainThread: number | undefined
    postgres: number
    loadGenerator: number
  }
  /** What the CPU measured per login allows on this machine, in logins/s: service + PostgreSQL on every core; the main thread alone. */
  ceilings: { allCores: number | undefined, mainThread: number | undefined }
  ok: number
  overloaded: number
  otherErrors: number
  durationSeconds: number
  concurrency: number
}

async function storm (profile: Profile): Promise<StormResult> {
  const durationMs = Number(args.duration) * 1000
  const concurrency = Number(args.concurrency)
  const service = args.target === undefined ? await startService(profile) : undefined
  const url = args.target ?? service?.url ?? ''
  const servicePid = service?.child.pid ?? (args.pid === undefined ? undefined : Number(args.pid))
  const measureThreads = servicePid !== undefined && fs.existsSync(`/proc/${servicePid}/task`)
  const pool = new Pool(url, { connections: concurrency + 4, pipelining: 1 })
  const probe = new Pool(url, { connections: 1 })
  try {
    const verifyMs = await singleThreadVerifyMs(profile.policy)
    const threads = await metricValue(pool, 'tollbooth_hash_pool_threads') ?? detectCpuBudget().cpus

    // Setup, not counted: accounts to log in with.
    const accounts = Array.from({ length: Number(args.accounts) }, (_, i) => ({ email: `storm-${i}-${process.pid}@example.com`, password: `storm password ${i}` }))
    for (const account of accounts) {
      const { status } = await post(pool, '/api/v1/auth/register', account)
      if (status !== 201 && status !== 409) throw new Error(`registration failed with ${status}`)
    }

    const logins = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 })
    const health = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 })
    let ok = 0
    let overloaded = 0
    let otherErrors = 0
    const serverBefore = await serverSnapshot(pool)
    const threadsBefore = measureThreads ? threadCpu(servicePid) : undefined
    const pgBefore = postgresCpuSeconds(service?.dataDir)
    const clientBefore = process.cpuUsage()
    const started = performance.now()
    const endAt = started + durationMs
    let next = 0

    const healthLoop = (async () => {
      while (performance.now() < endAt) {
        const sent = performance.now()
        const response = await probe.request({ method: 'GET', path: '/healthz' })
        await response.body.dump()
        health.recordValue(Math.round((performance.now() - sent) * 1000))
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    })()

    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (performance.now() < endAt) {
        const account = accounts[next++ % accounts.length]
        const sent = performance.now()
        const { status, retryAfter } = await post(pool, '/api/v1/auth/login', account)
        const micros = Math.round((performance.now() - sent) * 1000)
        if (status === 200) {
          ok++
          logins.recordValue(micros)
        } else if (status === 503) {
          overloaded++
          // A well-behaved client honours Retry-After (bounded by the run's end).
          const waitMs = Math.min(Number(retryAfter ?? '1') * 1000, Math.max(0, endAt - performance.now()))
          await new Promise((resolve) => setTimeout(resolve, waitMs))
        } else {
          otherErrors++
        }
      }
    }))
    await healthLoop
    const elapsedSeconds = (performance.now() - started) / 1000
    const clientCpu = process.cpuUsage(clientBefore)
    const threadsAfter = measureThreads ? threadCpu(servicePid) : undefined
    const serverAfter = await serverSnapshot(pool)
    const pgSeconds = postgresCpuSeconds(service?.dataDir) - pgBefore
    const split = threadsBefore === undefined || threadsAfter === undefined || servicePid === undefined
      ? undefined
      : splitServiceCpu(servicePid, threadsBefore, threadsAfter, threads)
    const hashSeconds = serverAfter.hashRunSeconds - serverBefore.hashRunSeconds
    const hashes = Math.max(1, serverAfter.hashCount - serverBefore.hashCount)
    const perLogin = (seconds: number): number => (seconds * 1000) / Math.max(1, ok)
    const achieved = ok / elapsedSeconds
    const physical = threads * 1000 / verifyMs
    const cpuMsPerLogin = {
      hashThreads: split === undefined ? undefined : perLogin(split.hashThreads),
      hashWallClock: perLogin(hashSeconds),
      serviceOther: split === undefined ? undefined : perLogin(split.mainThread + split.otherThreads),
      mainThread: split === undefined ? undefined : perLogin(split.mainThread),
      postgres: perLogin(pgSeconds),
      loadGenerator: perLogin((clientCpu.user + clientCpu.system) / 1e6),
    }
    // Every core busy with the service and its database (the load generator belongs elsewhere), and
    // the main thread, which is one core at most, busy with its share.
    const totalMs = split === undefined ? undefined : (cpuMsPerLogin.hashThreads ?? 0) + (cpuMsPerLogin.serviceOther ?? 0) + cpuMsPerLogin.postgres
    return {
      profile: profile.name,
      threads,
      verifyMs,
      physicalLimitPerSecond: physical,
      achievedPerSecond: achieved,
      ratio: achieved / physical,
      loginP50Ms: percentile(logins, 50),
      loginP95Ms: percentile(logins, 95),
      loginP99Ms: percentile(logins, 99),
      healthzP99Ms: percentile(health, 99),
      healthzMaxMs: health.maxValue / 1000,
      verifyUnderLoadMs: (hashSeconds * 1000) / hashes,
      hashThreadBusy: hashSeconds / (threads * elapsedSeconds),
      cpuMsPerLogin,
      ceilings: {
        allCores: totalMs === undefined || totalMs === 0 ? undefined : (detectCpuBudget().cpus * 1000) / totalMs,
        mainThread: cpuMsPerLogin.mainThread === undefined || cpuMsPerLogin.mainThread === 0 ? undefined : 1000 / cpuMsPerLogin.mainThread,
      },
      ok,
      overloaded,
      otherErrors,
      durationSeconds: elapsedSeconds,
      concurrency,
    }
  } finally {
    await pool.close()
    await probe.close()
    if (service !== undefined) {
      const exited = new Promise((resolve) => service.child.once('exit', resolve))
      service.child.kill('SIGTERM')
      await exited
      fs.rmSync(service.dataDir, { recursive: true, force: true })
    }
  }
}

function print (result: StormResult): void {
  const f = (n: number, digits = 1): string => n.toFixed(digits)
  const ms = (n: number | undefined): string => n === undefined ? 'n/a (no service pid: use --pid)' : `${f(n, 2)} ms`
  const perSecond = (n: number | undefined): string => n === undefined ? 'n/a' : `${f(n, 0)} logins/s`
  const cpu = result.cpuMsPerLogin
  process.stdout.write([
    `\n## ${result.profile}`,
    `hash threads                 ${result.threads}`,
    `single-thread verify         ${f(result.verifyMs, 2)} ms (median, same run)`,
    `physical limit               ${f(result.physicalLimitPerSecond)} logins/s (threads / verify time)`,
    `achieved                     ${f(result.achievedPerSecond)} logins/s over ${f(result.durationSeconds)} s, ${result.concurrency} concurrent clients`,
    `ratio achieved / limit       ${f(result.ratio, 2)}`,
    `login latency p50/p95/p99    ${f(result.loginP50Ms)} / ${f(result.loginP95Ms)} / ${f(result.loginP99Ms)} ms`,
    `/healthz p99 (max) in storm  ${f(result.healthzP99Ms, 2)} ms (${f(result.healthzMaxMs, 2)} ms)`,
    `verify during the storm      ${f(result.verifyUnderLoadMs, 2)} ms (mean, measured in the workers); hash threads busy ${f(result.hashThreadBusy * 100)} %`,
    `CPU per login                hash threads ${ms(cpu.hashThreads)} (their wall-clock run time ${f(cpu.hashWallClock, 2)} ms), rest of the service ${ms(cpu.serviceOther)} (main thread ${ms(cpu.mainThread)}), PostgreSQL ${f(cpu.postgres, 2)} ms, load generator ${f(cpu.loadGenerator, 2)} ms`,
    `CPU ceiling                  ${perSecond(result.ceilings.allCores)} with every core on the service and PostgreSQL; ${perSecond(result.ceilings.mainThread)} for the main thread alone`,
    `answers                      ${result.ok} ok, ${result.overloaded} x 503 (Retry-After honoured), ${result.otherErrors} other errors`,
    '',
  ].join('\n'))
}

async function main (): Promise<void> {
  const chosen = args.profile ?? ['bcrypt10', 'argon2-light']
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU'
  const budget = detectCpuBudget()
  process.stdout.write(`# login storm: ${cpu}, ${os.cpus().length} cores, CPU budget ${budget.cpus} (${budget.source}), Node ${process.version}\n`)
  const results: StormResult[] = []
  for (const name of chosen) {
    const profile = profiles[name]
    if (profile === undefined) throw new Error(`unknown profile ${name}; choose from ${Object.keys(profiles).join(', ')}`)
    const result = await storm(profile)
    print(result)
    results.push(result)
  }
  if (args.json !== undefined) fs.writeFileSync(args.json, JSON.stringify({ machine: { cpu, cores: os.cpus().length, budget, node: process.version }, results }, null, 2))
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:login: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
