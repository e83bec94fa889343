/**
 * `npm run bench:cheap`: what a cheap request costs in tollbooth, against a bare Fastify + pg
 * server doing the same work (packages/service/bench/bare-me-server.ts: JWT verify + SELECT of
 * the user), in the same run, on the same PostgreSQL. The load is the lab's `me-crowd` scenario
 * as a closed loop: `--connections` users sending GET /api/v1/me back to back (a refused one again
 * at once, not after its Retry-After).
 *
 * One embedded PostgreSQL and an accounts service (tollbooth) that the lab's setup registers and
 * logs in through, for tokens every target accepts (HS256, one secret); then, each round, each
 * target started afresh and loaded for `--warmup` then `--duration` seconds:
 *
 *   tollbooth          the service as it ships
 *   bare               Fastify + pg, nothing else
 *   tollbooth refusing TOLLBOOTH_MAX_IN_FLIGHT=1: nearly every request is shed (503), so the cost of a refusal shows
 *
 * CPU per request over the seconds after the warm-up (read from /proc as the lab's seconds end):
 * the target's main thread and its other threads, PostgreSQL (postmaster and backends), and the
 * lab's process (its generator thread, its main thread, its /metrics scraper). Latency is the
 * whole run's, warm-up included. Then tollbooth once more under `node --cpu-prof` with the same
 * load, and its main thread's profile summarised: the functions and modules with the most self time.
 *
 *   npm run bench:cheap
 *   npm run bench:cheap -- --duration 15 --connections 64 --rounds 2 --json out.json
 */
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { startDatabase } from 'tollbooth/launcher'
import { labRun } from '../src/lab.js'
import { machineLine } from './machine.js'
import { clockTicksPerSecond, postgresCpuSeconds, processCpu, type ProcessCpu } from './proc.js'
import { serviceEnv, serviceRoot, startBareServer, startProfiledTollbooth, startTollbooth, type RunningServer } from './servers.js'

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    accounts: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '1' },
    'profile-duration': { type: 'string' },
    top: { type: 'string', default: '15' },
    json: { type: 'string' },
  },
})
const durationSeconds = Number(args.duration)
const warmupSeconds = Number(args.warmup)
const connections = Number(args.connections)
if (!Number.isInteger(warmupSeconds) || warmupSeconds < 1 || !Number.isInteger(durationSeconds) || durationSeconds < 1) throw new Error('--warmup and --duration are whole seconds, at least 1')

/** The service's profile summary (packages/service/bench/profile-summary.ts), from its build. */
const { summariseProfile } = await import(pathToFileURL(path.join(serviceRoot, 'dist', 'bench', 'profile-summary.js')).href) as typeof import('../../service/bench/profile-summary.js')
type ProfileSummary = ReturnType<typeof summariseProfile>

interface Reading { target: ProcessCpu, postgres: number, lab: NodeJS.CpuUsage }

interface Measured {
  target: string
  requests: number
  ok: number
  refused: number
  other: number
  perSecond: number
  p50Ms: number | null
  p99Ms: number | null
  /** CPU ms per request, by where it ran. */
  cpuMsPerRequest: { service: number, mainThread: number, otherThreads: number, postgres: number, loadGenerator: number }
  warnings: string[]
}

/**
 * One lab run of me-crowd against `server`, its setup through `accountsUrl`; CPU and requests
 * counted from the end of the warm-up's last second to the end of the run's last.
 */
async function measure (target: string, server: RunningServer, accountsUrl: string, postgresPort: string, seconds = warmupSeconds + durationSeconds): Promise<Measured> {
  const read = (): Reading => ({ target: processCpu(server.pid), postgres: postgresCpuSeconds(postgresPort), lab: process.cpuUsage() })
  const readings = new Map<number, Reading>()
  let firstT: number | undefined
  const result = await labRun({
    scenario: 'me-crowd',
    target: server.url,
    setupTarget: accountsUrl,
    // Naive users, as a closed loop of back-to-back requests: a refused request is sent again at once.
    load: { vus: connections, durationMs: seconds * 1000, healthzProbeRate: 0, honourRetryAfter: false, accounts: Number(args.accounts) },
    onSecond: (_label, sample) => {
      if (firstT === undefined && sample.offered > 0) firstT = sample.t
      // Seconds of load ended: the window is the last `durationSeconds` of them.
      const ended = firstT === undefined ? 0 : sample.t - firstT + 1
      if (ended === seconds - durationSeconds || ended === seconds) readings.set(ended, read())
    },
  })
  const run = result.runs[0]
  const before = readings.get(seconds - durationSeconds)
  const after = readings.get(seconds)
  if (run === undefined || before === undefined || after === undefined || firstT === undefined) throw new Error(`${target}: the run ended before its window did (${result.warnings.join('; ')})`)
  const from = firstT + seconds - durationSeconds
  const window = run.seconds.filter((sample) => sample.t >= from && sample.t < from + durationSeconds)
  const requests = window.reduce((sum, sample) => sum + sample.all.requests, 0)
  const ok = window.reduce((sum, sample) => sum + sample.all.ok, 0)
  const refused = window.reduce((sum, sample) => sum + (sample.all.errors.byStatus['503'] ?? 0), 0)
  const per = (cpuSeconds: number): number => (cpuSeconds * 1000) / Math.max(1, requests)
  const service = after.target.total - before.target.total
  const main = after.target.main - before.target.main
  const lab = (after.lab.user + after.lab.system - before.lab.user - before.lab.system) / 1e6
  return {
    target,
    requests,
    ok,
    refused,
    other: requests - ok - refused,
    perSecond: requests / durationSeconds,
    p50Ms: run.all.latency.p50Ms,
    p99Ms: run.all.latency.p99Ms,
    cpuMsPerRequest: { service: per(service), mainThread: per(main), otherThreads: per(service - main), postgres: per(after.postgres - before.postgres), loadGenerator: per(lab) },
    // The bare server has no /metrics for the lab to scrape.
    warnings: result.warnings.filter((warning) => target !== 'bare' || !/\/metrics scrape/.test(warning)),
  }
}

/** tollbooth under --cpu-prof with the same load, and its main thread's profile summarised. */
async function profileTollbooth (env: NodeJS.ProcessEnv, accountsUrl: string, postgresPort: string, seconds: number): Promise<ProfileSummary & { requests: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-cpu-prof-'))
  try {
    const server = await startProfiledTollbooth(env, dir)
    let measured: Measured
    try {
      measured = await measure('tollbooth under --cpu-prof', server, accountsUrl, postgresPort, Math.max(seconds, warmupSeconds + 1))
    } finally {
      await server.stop()
    }
    // CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile; thread 0 is the main thread (the others are hash workers).
    const main = fs.readdirSync(dir).find((file) => new RegExp(`^CPU\\.\\d+\\.\\d+\\.${server.pid}\\.0\\.\\d+\\.cpuprofile$`).test(file))
    if (main === undefined) throw new Error(`no main-thread profile in ${dir}: ${fs.readdirSync(dir).join(', ')}`)
    const profile = JSON.parse(fs.readFileSync(path.join(dir, main), 'utf8')) as Parameters<typeof summariseProfile>[0]
    return { ...summariseProfile(profile, Number(args.top)), requests: measured.requests }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

function f (n: number | null, digits = 1): string {
  return n === null ? '—' : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

function printMeasured (m: Measured): void {
  const cpu = m.cpuMsPerRequest
  process.stdout.write(`${m.target.padEnd(20)} ${f(m.perSecond, 0).padStart(7)} req/s  ` +
    `${m.ok} ok, ${m.refused} x 503, ${m.other} other  p50 ${f(m.p50Ms, 2)} ms, p99 ${f(m.p99Ms, 2)} ms\n` +
    `${''.padEnd(20)} CPU per request: service ${f(cpu.service * 1000, 0)} us (main thread ${f(cpu.mainThread * 1000, 0)} us, other threads ${f(cpu.otherThreads * 1000, 0)} us), ` +
    `PostgreSQL ${f(cpu.postgres * 1000, 0)} us, load generator ${f(cpu.loadGenerator * 1000, 0)} us\n`)
  for (const warning of m.warnings) process.stdout.write(`${''.padEnd(20)} lab: ${warning}\n`)
}

process.stdout.write(`# cheap request: ${machineLine()}, CLK_TCK ${clockTicksPerSecond}\n`)
process.stdout.write(`# the lab's me-crowd, ${connections} closed-loop users, ${warmupSeconds} s warm-up then ${durationSeconds} s measured per target, GET /api/v1/me\n\n`)

const database = await startDatabase({ name: 'tollbooth_bench', label: 'bench-cheap' })
const postgresPort = new URL(database.url).port
const jwtSecret = randomBytes(32).toString('base64url')
const env = serviceEnv(database.url, {
  TOLLBOOTH_JWT_SECRET: jwtSecret,
  // HS256 as the bare server: the comparison is of everything around the token check.
  TOLLBOOTH_JWT_ALGORITHM: 'HS256',
  // Registration in setup only: a light hash keeps it quick; GET /me never hashes.
  TOLLBOOTH_ARGON2_MEMORY_KIB: '1024',
  TOLLBOOTH_ARGON2_TIME_COST: '1',
})
const results: Measured[] = []
let profile: (ProfileSummary & { requests: number }) | undefined
try {
  // The lab's setup goes here for every target: the bare server has no account routes, the refusing service refuses them.
  const accounts = await startTollbooth(env)
  try {
    for (let round = 1; round <= Number(args.rounds); round++) {
      if (Number(args.rounds) > 1) process.stdout.write(`## round ${round}\n`)
      const targets: Array<[string, () => Promise<RunningServer>]> = [
        ['tollbooth', async () => await startTollbooth(env)],
        ['bare', async () => await startBareServer(database.url, jwtSecret)],
        // Every request past the first in flight is shed: the cost of a refusal.
        ['tollbooth refusing', async () => await startTollbooth({ ...env, TOLLBOOTH_MAX_IN_FLIGHT: '1', TOLLBOOTH_MAX_EVENT_LOOP_DELAY_MS: '0' })],
      ]
      for (const [target, start] of targets) {
        const server = await start()
        try {
          const measured = await measure(target, server, accounts.url, postgresPort)
          printMeasured(measured)
          results.push(measured)
        } finally {
          await server.stop()
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

    const profileSeconds = Number(args['profile-duration'] ?? warmupSeconds + durationSeconds)
    profile = await profileTollbooth(env, accounts.url, postgresPort, profileSeconds)
    process.stdout.write(`## tollbooth under --cpu-prof (${profile.requests} requests in its last ${durationSeconds} s): main thread busy ${f(profile.busyMs, 0)} ms, idle ${f(profile.idleMs, 0)} ms over the whole run\n`)
    process.stdout.write('\nself time by module (of the busy time)\n')
    for (const entry of profile.modules) process.stdout.write(`  ${f(entry.share * 100).padStart(5)} %  ${f(entry.ms, 0).padStart(7)} ms  ${entry.name}\n`)
    process.stdout.write('\nself time by function\n')
    for (const entry of profile.functions) process.stdout.write(`  ${f(entry.share * 100).padStart(5)} %  ${f(entry.ms, 0).padStart(7)} ms  ${entry.name}\n`)
  } finally {
    await accounts.stop()
  }
} finally {
  await database.stop()
}
if (args.json !== undefined) {
  fs.writeFileSync(args.json, JSON.stringify({ machine: machineLine(), clockTicksPerSecond, connections, warmupSeconds, durationSeconds, results, profile }, null, 2))
}
