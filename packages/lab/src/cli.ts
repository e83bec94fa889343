/**
 * `tollbooth lab run | knee | compare | report | scenarios`: flags -> the lab's
 * library calls (src/lab/lab.ts), a live progress line, the final table, and
 * the report files.
 */
import path from 'node:path'
import fs from 'node:fs'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { createError } from './errors.js'
import { allStrategies, labCompare, type ClientKind, labKnee, labRun, labScale, type KneeOptions, type LabOptions, type LoadOptions } from './lab.js'
import { formatMs } from './report/format.js'
import { renderText, writeReports } from './report/index.js'
import type { LabResult, SecondSample, ServerSample } from './result.js'
import { builtInScenarios } from './scenarios/index.js'
import { parseDurationMs, parseFraction, parseStages } from './schedule.js'

const loadFlags = `Load (closed model: virtual users; open model: an arrival rate):
  --duration D             how long the load runs (default 30s; auth-path: per phase)
  --vus N                  N virtual users for the whole duration (closed)
  --stages S               ramping VUs, k6-style: 30s:100,60s:100 (closed)
  --think-time D           pause between a VU's iterations (default: the scenario's)
  --rate R                 R arrivals per second (open; latency counts from the intended send time)
  --rate-stages S          ramping rate from --rate: 30s:50,30s:100 (open)
  --max-in-flight N        open model: arrivals beyond N in flight are dropped and counted (default 2000)
  --no-retry-after         closed model: do not wait out a 503's Retry-After before the next iteration
  --timeout D              per-request timeout, counted as a timeout (default 30s)
  --healthz-rate R         /healthz probes per second during the load (default 10; 0: none)
  --workers N              load-generator worker threads (default 1)
  --accounts N             accounts pre-registered in setup (default: the scenario's)

Service (without --target the lab starts its own, on an embedded PostgreSQL, and stops it after):
  --target URL             measure a running service instead
  --strategy NAME          run/knee: the hash strategy of the service the lab starts (default tollbooth)
  --hash-algorithm A       services the lab starts: argon2id | bcrypt | scrypt (default bcrypt, the seeds')
  --bcrypt-cost N          services the lab starts (default 10, the seeds')
  --service-env K=V        any other setting of services the lab starts (repeatable), e.g. TOLLBOOTH_HASH_THREADS=1
  --database-url URL       services the lab starts use this PostgreSQL instead of an embedded one
  --replicas N             N services behind HAProxy on one PostgreSQL (scale: a list, 1,2,3)
  --cpus-per-replica C     each replica under a C-CPU cgroup quota (as root; otherwise none, with a warning)

Output:
  --out DIR                where result.json, the CSV files and report.html go
                           (default lab-results/<command>-<scenario>-<time>)
  --quiet                  no progress line`

export const labUsage = `tollbooth lab: load the service like a crowd does, and see where it breaks

Usage:
  tollbooth lab run --scenario NAME [flags]       one load against one service
  tollbooth lab knee --scenario NAME [flags]      raise the arrival rate 10 % per step until the service falls behind
  tollbooth lab compare --scenario NAME [flags]   the same load against every hash strategy, side by side
  tollbooth lab scale --scenario NAME --replicas 1,2,3 [flags]   the same load against 1, 2, 3 replicas
  tollbooth lab report RESULT.json [--out DIR]    render the reports of a result again
  tollbooth lab scenarios                         list the built-in scenarios

Scenarios: ${Object.keys(builtInScenarios).join(', ')}, or a path to a .json or .js file (docs/guides/load-lab.md).

${loadFlags}

Knee:
  --start-rate R           first offered rate (default: the scenario's)
  --step P                 growth per step (default 10%)
  --step-duration D        length of each step (default 10s)
  --max-steps N            at most N steps (default 40)
  --max-rate R             never offer more than R/s
  --margin P               a step falls behind when achieved < offered x (1 - P) (default 10%)
  --p99-limit D            a step fails when its p99 passes D (default 1s)
  --error-limit P          a step fails when its error rate passes P (default 1%)

Compare:
  --strategies a,b,...     default: ${allStrategies.join(',')}
  --clients polite,naive   measure each strategy with clients that wait out a 503's Retry-After (polite),
                           that retry at once (naive, as k6 VUs in the seeds' scripts do), or both, in one run
                           (default: polite, or naive with --no-retry-after)
`

const options = {
  scenario: { type: 'string' },
  target: { type: 'string' },
  duration: { type: 'string' },
  vus: { type: 'string' },
  stages: { type: 'string' },
  'think-time': { type: 'string' },
  rate: { type: 'string' },
  'rate-stages': { type: 'string' },
  'max-in-flight': { type: 'string' },
  'no-retry-after': { type: 'boolean' },
  timeout: { type: 'string' },
  'healthz-rate': { type: 'string' },
  workers: { type: 'string' },
  accounts: { type: 'string' },
  strategy: { type: 'string' },
  strategies: { type: 'string' },
  clients: { type: 'string' },
  'hash-algorithm': { type: 'string' },
  'bcrypt-cost': { type: 'string' },
  'service-env': { type: 'string', multiple: true },
  'database-url': { type: 'string' },
  replicas: { type: 'string' },
  'cpus-per-replica': { type: 'string' },
  out: { type: 'string' },
  quiet: { type: 'boolean' },
  'start-rate': { type: 'string' },
  step: { type: 'string' },
  'step-duration': { type: 'string' },
  'max-steps': { type: 'string' },
  'max-rate': { type: 'string' },
  margin: { type: 'string' },
  'p99-limit': { type: 'string' },
  'error-limit': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options']

type Values = ReturnType<typeof parseArgs<{ options: typeof options, allowPositionals: true, strict: true }>>['values']

function number (text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined
  const value = Number(text)
  if (text.trim() === '' || !Number.isFinite(value)) throw createError('CONFIG_INVALID', `--${flag} must be a number, got "${text}"`, { field: flag })
  return value
}

function loadOptionsOf (values: Values): LoadOptions {
  const load: LoadOptions = {}
  const set = <K extends keyof LoadOptions>(key: K, value: LoadOptions[K] | undefined): void => { if (value !== undefined) load[key] = value }
  set('durationMs', values.duration === undefined ? undefined : parseDurationMs(values.duration, '--duration'))
  set('vus', number(values.vus, 'vus'))
  set('stages', values.stages === undefined ? undefined : parseStages(values.stages, '--stages'))
  set('thinkTimeMs', values['think-time'] === undefined ? undefined : parseDurationMs(values['think-time'], '--think-time'))
  set('rate', number(values.rate, 'rate'))
  set('rateStages', values['rate-stages'] === undefined ? undefined : parseStages(values['rate-stages'], '--rate-stages'))
  set('maxInFlight', number(values['max-in-flight'], 'max-in-flight'))
  set('requestTimeoutMs', values.timeout === undefined ? undefined : parseDurationMs(values.timeout, '--timeout'))
  set('healthzProbeRate', number(values['healthz-rate'], 'healthz-rate'))
  set('workers', number(values.workers, 'workers'))
  set('accounts', number(values.accounts, 'accounts'))
  if (values['no-retry-after'] === true) load.honourRetryAfter = false
  return load
}

function serviceEnvOf (values: Values): Record<string, string> {
  const env: Record<string, string> = {}
  for (const pair of values['service-env'] ?? []) {
    const eq = pair.indexOf('=')
    if (eq <= 0) throw createError('CONFIG_INVALID', `--service-env takes KEY=VALUE, got "${pair}"`, { field: 'service-env' })
    env[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  if (values['hash-algorithm'] !== undefined) env.TOLLBOOTH_HASH_ALGORITHM = values['hash-algorithm']
  if (values['bcrypt-cost'] !== undefined) env.TOLLBOOTH_BCRYPT_COST = values['bcrypt-cost']
  return env
}

/** One line per second: on a terminal it rewrites itself; in a log, one line every 5 s. */
function progressPrinter (quiet: boolean): { onSecond: NonNullable<LabOptions['onSecond']>, log: (line: string) => void, end: () => void } {
  const tty = process.stderr.isTTY
  let pending = false
  const clear = (): void => {
    if (tty && pending) process.stderr.write('\r\x1b[2K')
    pending = false
  }
  return {
    onSecond (label: string, sample: SecondSample, server: ServerSample | undefined) {
      if (quiet || (!tty && sample.t % 5 !== 0)) return
      const errors = sample.all.requests - sample.all.ok
      const parts = [
        `[${label} ${String(sample.t).padStart(3)}s${sample.phase === undefined ? '' : ` ${sample.phase}`}]`,
        sample.vus === null || sample.vus === 0 ? `offered ${sample.offered}/s` : `vus ${sample.vus}`,
        `ok ${sample.achieved}/s`,
        `req ${sample.all.requests}/s`,
        `p95 ${formatMs(sample.all.latency.p95Ms)} ms`,
        `errors ${errors}`,
        `in flight ${sample.inFlight}`,
        ...(sample.healthz === null ? [] : [`healthz p99 ${formatMs(sample.healthz.p99Ms)} ms`]),
        ...(server?.cpuCores == null ? [] : [`cpu ${(server.processTreeCpuCores ?? server.cpuCores).toFixed(2)}`]),
      ]
      const line = parts.join('  ')
      if (tty) {
        process.stderr.write(`\r\x1b[2K${line}`)
        pending = true
      } else {
        process.stderr.write(`${line}\n`)
      }
    },
    log (line: string) {
      clear()
      if (!quiet) process.stderr.write(`${line}\n`)
    },
    end: clear,
  }
}

function defaultOutDir (command: string, scenario: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').replace(/-\d+Z$/, 'Z')
  return path.join('lab-results', `${command}-${path.basename(scenario).replace(/\.(json|m?js)$/, '')}-${stamp}`)
}

async function finish (result: LabResult, outDir: string): Promise<void> {
  process.stdout.write(`${renderText(result)}\n`)
  const written = await writeReports(outDir, result)
  const shown = (file: string): string => (file.startsWith(process.cwd() + path.sep) ? path.relative(process.cwd(), file) : file)
  process.stdout.write(`\nwrote ${written.map(shown).join(', ')}\n`)
}

export async function labMain (argv: string[]): Promise<void> {
  const [command, ...rest] = argv
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(labUsage)
    return
  }
  if (command === 'scenarios') {
    for (const scenario of Object.values(builtInScenarios)) process.stdout.write(`${scenario.name.padEnd(14)} ${scenario.description}\n`)
    return
  }
  let parsed: { values: Values, positionals: string[] }
  try {
    parsed = parseArgs({ args: rest, options, allowPositionals: true, strict: true })
  } catch (err) {
    throw createError('CONFIG_INVALID', (err as Error).message)
  }
  const { values, positionals } = parsed
  if (values.help === true) {
    process.stdout.write(labUsage)
    return
  }

  if (command === 'report') {
    const file = positionals[0]
    if (file === undefined) throw createError('CONFIG_INVALID', 'lab report needs the path of a result.json')
    const result = JSON.parse(fs.readFileSync(file, 'utf8')) as LabResult
    await finish(result, values.out ?? path.dirname(file))
    return
  }
  if (!['run', 'knee', 'compare', 'scale'].includes(command)) throw createError('CONFIG_INVALID', `unknown lab command "${command}": use run, knee, compare, scale, report or scenarios`)
  if (positionals.length > 0) throw createError('CONFIG_INVALID', `unexpected argument "${positionals[0] ?? ''}"`)
  const scenario = values.scenario
  if (scenario === undefined) throw createError('CONFIG_INVALID', `lab ${command} needs --scenario (${Object.keys(builtInScenarios).join(', ')}, or a file)`, { field: 'scenario' })

  const replicaCounts = (values.replicas ?? (values['cpus-per-replica'] === undefined ? '' : '1')).split(',').filter((n) => n.trim() !== '').map((n) => number(n, 'replicas') ?? 1)
  if (command === 'scale' ? replicaCounts.length === 0 : replicaCounts.length > 1) throw createError('CONFIG_INVALID', command === 'scale' ? 'lab scale needs --replicas 1,2,3' : '--replicas takes one count here (a list: lab scale)', { field: 'replicas' })
  const progress = progressPrinter(values.quiet === true)
  const abort = new AbortController()
  const onSignal = (): void => {
    if (abort.signal.aborted) process.exit(130)
    progress.log('interrupted: stopping the load and writing what was measured (Ctrl-C again to quit at once)')
    abort.abort()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  const common: LabOptions = {
    scenario,
    target: values.target,
    databaseUrl: values['database-url'],
    load: loadOptionsOf(values),
    serviceEnv: serviceEnvOf(values),
    ...(values.strategy === undefined ? {} : { strategy: values.strategy }),
    ...(replicaCounts.length === 0 ? {} : { replicas: { count: replicaCounts[0] ?? 1, cpusPerReplica: number(values['cpus-per-replica'], 'cpus-per-replica') } }),
    commandLine: ['tollbooth', 'lab', ...argv].join(' '),
    log: progress.log,
    onSecond: progress.onSecond,
    signal: abort.signal,
  }
  const outDir = values.out ?? defaultOutDir(command, scenario)
  let result: LabResult
  try {
    if (command === 'run') {
      result = await labRun(common)
    } else if (command === 'scale') {
      result = await labScale({ ...common, replicaCounts })
    } else if (command === 'knee') {
      const criteria: KneeOptions['criteria'] = {}
      const startRate = number(values['start-rate'], 'start-rate')
      if (startRate !== undefined) criteria.startRate = startRate
      if (values.step !== undefined) criteria.stepFactor = parseFraction(values.step, '--step')
      if (values['step-duration'] !== undefined) criteria.stepDurationMs = parseDurationMs(values['step-duration'], '--step-duration')
      const maxSteps = number(values['max-steps'], 'max-steps')
      if (maxSteps !== undefined) criteria.maxSteps = maxSteps
      const maxRate = number(values['max-rate'], 'max-rate')
      if (maxRate !== undefined) criteria.maxRate = maxRate
      if (values.margin !== undefined) criteria.throughputMargin = parseFraction(values.margin, '--margin')
      if (values['p99-limit'] !== undefined) criteria.p99LimitMs = parseDurationMs(values['p99-limit'], '--p99-limit')
      if (values['error-limit'] !== undefined) criteria.errorRateLimit = parseFraction(values['error-limit'], '--error-limit')
      result = await labKnee({ ...common, criteria })
    } else {
      const strategies = values.strategies?.split(',').map((s) => s.trim()).filter((s) => s !== '')
      const clients = values.clients?.split(',').map((s) => s.trim()).filter((s) => s !== '') as ClientKind[] | undefined
      result = await labCompare({ ...common, ...(strategies === undefined ? {} : { strategies }), ...(clients === undefined ? {} : { clients }) })
    }
  } finally {
    progress.end()
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
  await finish(result, outDir)
}
