/**
 * `npm run bench:npm-start`: is a service started as the README says as fast as its hash threads
 * allow? In one run, at better-auth's scrypt (N=16384 r=16):
 *   1. the all-core verify limit with glibc's malloc settings (`bench:hash`'s pool measurement:
 *      every hash thread busy at once), the service not yet running;
 *   2. `tollbooth serve` started as `npm start` starts it: the `tollbooth` command, none of the
 *      malloc settings in its environment, its embedded PostgreSQL in a scratch folder;
 *   3. the lab's `login-storm`: 50 naive clients (a 503 retried at once) on one account, a 10 s
 *      warm-up then 20 s measured;
 *   4. the limit again, the service stopped.
 * It prints the logins/s of the measured window as a share of each limit and of their mean, and
 * whether the service ran with the settings (its start environment in /proc, and /metrics).
 *
 *   npm run bench:npm-start
 *   npm run bench:npm-start -- --malloc-settings off    # the same service with TOLLBOOTH_MALLOC_SETTINGS=off, for contrast
 *   npm run bench:npm-start -- --json
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs, promisify } from 'node:util'
import { tollboothBin } from 'tollbooth/launcher'
import { labRun, seedServiceEnv } from '../src/lab.js'
import { machineLine } from './machine.js'
import { serviceRoot } from './servers.js'

const { values: args } = parseArgs({
  options: {
    'malloc-settings': { type: 'string', default: 'auto' },
    vus: { type: 'string', default: '50' },
    'warm-up': { type: 'string', default: '10' },
    measure: { type: 'string', default: '20' },
    'per-thread': { type: 'string', default: '40' },
    json: { type: 'boolean', default: false },
  },
})
const mallocSettings = args['malloc-settings']
if (mallocSettings !== 'auto' && mallocSettings !== 'off') throw new Error('--malloc-settings: auto or off')
const positive = (name: 'vus' | 'warm-up' | 'measure' | 'per-thread'): number => {
  const value = Number(args[name])
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number above 0`)
  return value
}
const vus = positive('vus')
const warmUpSeconds = positive('warm-up')
const measureSeconds = positive('measure')
const perThread = positive('per-thread')
const mallocNames = ['MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_']
const loginEndpoint = 'POST /auth/login'
const log = (line: string): void => { if (!args.json) process.stderr.write(`${line}\n`) }

/** `bench:hash`'s pool figure at better-auth's scrypt: verifies/s with every hash thread busy (it runs itself with the malloc settings). */
async function allCoreLimit (): Promise<{ threads: number, verifiesPerSecond: number }> {
  const script = path.join(serviceRoot, 'dist', 'bench', 'hash-verify.js')
  const { stdout } = await promisify(execFile)(process.execPath, [script, '--json', '--profile', 'scrypt-better-auth', '--runs', '5', '--per-thread', String(perThread)], { maxBuffer: 1 << 20 })
  const result = JSON.parse(stdout) as { results: Array<{ pool: { threads: number, opsPerSecond: number } }> }
  const pool = result.results[0]?.pool
  if (pool === undefined) throw new Error(`hash-verify gave no result: ${stdout}`)
  return { threads: pool.threads, verifiesPerSecond: pool.opsPerSecond }
}

interface StartedService {
  url: string
  /** The process serving: the one started, or its child where node has no process.execve. */
  pid: number
  lines: Array<Record<string, unknown>>
  child: ChildProcess
}

/** `node packages/service/bin/tollbooth.js serve`, what `npm start` runs, with `env` as its whole environment. */
async function startAsNpmStart (env: NodeJS.ProcessEnv): Promise<StartedService> {
  const child = spawn(process.execPath, [tollboothBin, 'serve'], { env, stdio: ['ignore', 'pipe', 'inherit'] })
  const lines: Array<Record<string, unknown>> = []
  let partial = ''
  const listening = new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      const text = (partial + chunk.toString()).split('\n')
      partial = text.pop() ?? ''
      for (const line of text) {
        try {
          const parsed = JSON.parse(line) as Record<string, unknown>
          lines.push(parsed)
          if (parsed.msg === 'tollbooth is listening') resolve(parsed)
        } catch {} // not a log line
      }
    })
    child.once('exit', (code) => { reject(new Error(`tollbooth exited (code ${String(code)}) before it listened`)) })
  })
  const ready = await listening
  return { url: String(ready.url), pid: Number(ready.pid), lines, child }
}

async function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  await exited
}

/** The data folder, and the cluster it links to as `pg` where the embedded PostgreSQL runs as root (relocated where the `postgres` user can reach it). */
function removeDataDir (dir: string): void {
  const pg = path.join(dir, 'pg')
  if (fs.lstatSync(pg, { throwIfNoEntry: false })?.isSymbolicLink() === true) fs.rmSync(path.resolve(dir, fs.readlinkSync(pg)), { recursive: true, force: true })
  fs.rmSync(dir, { recursive: true, force: true })
}

/** The malloc settings in the environment `pid` started with (what glibc read). */
function startedWith (pid: number): string {
  const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
  return mallocNames.map((name) => environ.find((entry) => entry.startsWith(`${name}=`)) ?? `${name} unset`).join(' ')
}

const loadBefore = os.loadavg()[0] ?? 0
const before = await allCoreLimit()
log(`all-core limit before: ${before.verifiesPerSecond.toFixed(1)} verifies/s on ${before.threads} threads`)

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-npm-start-'))
const env: NodeJS.ProcessEnv = {
  ...process.env,
  // The lab's own settings for a service it measures: registration that signs in, no registration throttle.
  ...seedServiceEnv,
  TOLLBOOTH_HASH_ALGORITHM: 'scrypt',
  TOLLBOOTH_SCRYPT_N: '16384',
  TOLLBOOTH_SCRYPT_R: '16',
  TOLLBOOTH_DATA_DIR: dataDir,
  TOLLBOOTH_SHUTDOWN_DRAIN_MS: '0',
  TOLLBOOTH_LOG_LEVEL: 'info',
  TOLLBOOTH_MALLOC_SETTINGS: mallocSettings,
  HOST: '127.0.0.1',
  PORT: '0',
}
for (const name of [...mallocNames, 'DATABASE_URL', 'DATABASE_URL_FILE']) Reflect.deleteProperty(env, name)

let storm: { loginsPerSecond: number, refusedPerSecond: number, healthzP99Ms: number | null, servedWith: string, reexec: string, metricsLabel: string }
const service = await startAsNpmStart(env)
try {
  const reexecLine = service.lines.find((line) => String(line.msg).startsWith('malloc settings for hashing applied'))
  const servedWith = startedWith(service.pid)
  const metricsLabel = /malloc_settings="([^"]+)"/.exec(await (await fetch(`${service.url}/metrics`)).text())?.[1] ?? '?'
  log(`service at ${service.url}, pid ${service.pid}: started again ${reexecLine === undefined ? 'no' : `by ${String(reexecLine.by)}`}; its start environment: ${servedWith}; /metrics malloc_settings="${metricsLabel}"`)
  const result = await labRun({
    scenario: 'login-storm',
    target: service.url,
    load: { vus, accounts: 1, honourRetryAfter: false, durationMs: (warmUpSeconds + measureSeconds) * 1000 },
    log,
  })
  const run = result.runs[0]
  if (run === undefined) throw new Error(`no run: ${result.warnings.join('; ')}`)
  const measured = run.seconds.filter((second) => second.t > warmUpSeconds && second.t <= warmUpSeconds + measureSeconds)
  if (measured.length < measureSeconds) throw new Error(`only ${measured.length} of the ${measureSeconds} measured seconds were recorded`)
  const sum = (pick: (second: typeof measured[number]) => number): number => measured.reduce((total, second) => total + pick(second), 0)
  storm = {
    loginsPerSecond: sum((second) => second.byEndpoint[loginEndpoint]?.ok ?? 0) / measureSeconds,
    refusedPerSecond: sum((second) => second.byEndpoint[loginEndpoint]?.errors.byStatus['503'] ?? 0) / measureSeconds,
    healthzP99Ms: run.healthz?.p99Ms ?? null,
    servedWith,
    reexec: reexecLine === undefined ? 'none' : String(reexecLine.by),
    metricsLabel,
  }
} finally {
  await stop(service.child)
  removeDataDir(dataDir)
}

const after = await allCoreLimit()
const meanLimit = (before.verifiesPerSecond + after.verifiesPerSecond) / 2
const report = {
  machine: machineLine(),
  settings: { scrypt: 'N=16384 r=16 p=1', vus, accounts: 1, clients: 'naive', warmUpSeconds, measureSeconds, mallocSettings },
  limitBefore: before.verifiesPerSecond,
  limitAfter: after.verifiesPerSecond,
  threads: before.threads,
  ...storm,
  ratio: storm.loginsPerSecond / meanLimit,
  ratioBefore: storm.loginsPerSecond / before.verifiesPerSecond,
  ratioAfter: storm.loginsPerSecond / after.verifiesPerSecond,
  /** The machine's 1-minute load average at the start and the end: others' work on a shared machine moves both figures. */
  loadAverage: [loadBefore, os.loadavg()[0] ?? 0],
}
if (args.json) {
  process.stdout.write(`${JSON.stringify(report)}\n`)
} else {
  const f = (value: number): string => value.toFixed(1)
  process.stdout.write([
    `# ${report.machine}`,
    `# \`tollbooth serve\` as \`npm start\` starts it (TOLLBOOTH_MALLOC_SETTINGS=${mallocSettings}), embedded PostgreSQL; scrypt N=16384 r=16; ${vus} naive clients on one account, ${warmUpSeconds} s warm-up + ${measureSeconds} s measured`,
    `service: started again ${report.reexec}; start environment ${report.servedWith}; /metrics malloc_settings="${report.metricsLabel}"`,
    `all-core limit with the malloc settings (${report.threads} threads): ${f(report.limitBefore)} before, ${f(report.limitAfter)} after verifies/s`,
    `logins/s: ${f(report.loginsPerSecond)} (503 refused: ${f(report.refusedPerSecond)}/s; /healthz p99 ${report.healthzP99Ms?.toFixed(1) ?? '-'} ms)`,
    `ratio: ${report.ratio.toFixed(3)} of the mean limit (${report.ratioBefore.toFixed(3)} of before, ${report.ratioAfter.toFixed(3)} of after)`,
    `1-minute load average: ${report.loadAverage.map((load) => load.toFixed(2)).join(' at the start, ')} at the end`,
    '',
  ].join('\n'))
}
