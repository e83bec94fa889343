/**
 * `tollbooth lab run | knee | compare | scale | sizing | report | scenarios`: flags -> the lab's library calls
 * (lab.ts), a live progress line, the final table, and the report files. Every flag is declared
 * once, in `flags`: its parsing, where its value goes, and its line of `--help`.
 */
import path from 'node:path'
import fs from 'node:fs'
import { parseArgs } from 'node:util'
import { LabError } from '../errors.js'
import { allStrategies, labCompare, labKnee, labRun, labScale, labSizing, type ClientKind, type KneeOptions, type LabOptions, type LoadOptions, type SizingOptions } from '../lab.js'
import { formatMs, renderText, writeReports } from '../report/index.js'
import type { LabResult, SecondSample, ServerSample, Stage } from '../result.js'
import { builtInScenarios } from '../scenarios/index.js'
import { parseDurationMs } from '../time.js'

function number (text: string, flag: string): number {
  const value = Number(text)
  if (text.trim() === '' || !Number.isFinite(value)) throw new LabError(`${flag} must be a number, got "${text}"`, flag)
  return value
}

/** "30s:100,60s:100" (k6's stages: duration:target). Throws CONFIG_INVALID. */
export function parseStages (text: string, what = 'stages'): Stage[] {
  const stages = text.split(',').map((item) => item.trim()).filter((item) => item !== '').map((item) => {
    const [duration, target, ...rest] = item.split(':')
    if (duration === undefined || target === undefined || rest.length > 0 || !/^\d+(\.\d+)?$/.test(target.trim())) {
      throw new LabError(`${what}: each stage is duration:target, like 30s:100, got "${item}"`, what)
    }
    return { durationMs: parseDurationMs(duration, what), target: Number(target) }
  })
  if (stages.length === 0) throw new LabError(`${what} must have at least one stage`, what)
  if (stages.some((stage) => stage.durationMs <= 0)) throw new LabError(`${what}: every stage needs a duration above 0`, what)
  return stages
}

/** "10%" or "0.1" -> 0.1. */
export function parseFraction (text: string, what: string): number {
  const trimmed = text.trim()
  const value = trimmed.endsWith('%') ? Number(trimmed.slice(0, -1)) / 100 : Number(trimmed)
  if (!Number.isFinite(value) || value < 0) throw new LabError(`${what} must be a fraction like 10% or 0.1, got "${text}"`, what)
  return value
}

const parsers = { number, duration: parseDurationMs, stages: parseStages, fraction: parseFraction }

type Group = 'load' | 'service' | 'output' | 'knee' | 'compare' | 'sizing'
interface Flag {
  group: Group
  /** The value's placeholder in --help; '' for a switch. */
  arg: string
  help: string
  parse?: keyof typeof parsers
  /** Where the parsed value goes: a load option, a knee criterion, or a setting of the services the lab starts. */
  load?: keyof LoadOptions
  knee?: keyof NonNullable<KneeOptions['criteria']>
  env?: string
  multiple?: boolean
}

const flags: Record<string, Flag> = {
  duration: { group: 'load', arg: 'D', help: 'how long the load runs (default 30s, or the scenario\'s: login-burst 1s; auth-path: per phase)', parse: 'duration', load: 'durationMs' },
  vus: { group: 'load', arg: 'N', help: 'N virtual users for the whole duration (closed)', parse: 'number', load: 'vus' },
  stages: { group: 'load', arg: 'S', help: 'ramping VUs, k6-style: 30s:100,60s:100 (closed)', parse: 'stages', load: 'stages' },
  'think-time': { group: 'load', arg: 'D', help: 'pause between a VU\'s iterations (default: the scenario\'s)', parse: 'duration', load: 'thinkTimeMs' },
  rate: { group: 'load', arg: 'R', help: 'R arrivals per second (open; latency counts from the intended send time)', parse: 'number', load: 'rate' },
  'rate-stages': { group: 'load', arg: 'S', help: 'ramping rate from --rate: 30s:50,30s:100 (open)', parse: 'stages', load: 'rateStages' },
  'max-in-flight': { group: 'load', arg: 'N', help: 'open model: arrivals beyond N in flight are dropped and counted (default 2000)', parse: 'number', load: 'maxInFlight' },
  'no-retry-after': { group: 'load', arg: '', help: 'closed model: do not wait out a 503\'s Retry-After before the next iteration' },
  timeout: { group: 'load', arg: 'D', help: 'per-request timeout, counted as a timeout (default 30s)', parse: 'duration', load: 'requestTimeoutMs' },
  'healthz-rate': { group: 'load', arg: 'R', help: '/healthz probes per second during the load, at random times (default 10; 0: none)', parse: 'number', load: 'healthzProbeRate' },
  'source-addresses': { group: 'load', arg: 'N', help: 'closed model: the virtual users connect from N loopback addresses (127.1.0.1 ...), as clients from N machines; the target must be on 127.x (default 1; login-burst: one per user)', parse: 'number', load: 'sourceAddresses' },
  'http-client': { group: 'load', arg: 'NAME', help: 'the generator\'s HTTP client: raw (the lab\'s own HTTP/1.1 client, lighter on the CPU the service shares; plain http only) or undici (default raw)', load: 'httpClient' },
  workers: { group: 'load', arg: 'N', help: 'load-generator worker threads (default 1)', parse: 'number', load: 'workers' },
  accounts: { group: 'load', arg: 'N', help: 'accounts pre-registered in setup (default: the scenario\'s)', parse: 'number', load: 'accounts' },
  'passkey-share': { group: 'load', arg: 'P', help: 'mixed-storm: the share of users signing in with a passkey, the others with a password (default 50%)', parse: 'fraction', load: 'passkeyShare' },
  target: { group: 'service', arg: 'URL', help: 'measure a running service instead' },
  'metrics-url': { group: 'service', arg: 'URL', help: 'with --target: where its /metrics is, when TOLLBOOTH_ADMIN_PORT moved it (default: the target)' },
  strategy: { group: 'service', arg: 'NAME', help: 'run/knee: the hash strategy of the service the lab starts (default tollbooth)' },
  'hash-algorithm': { group: 'service', arg: 'A', help: 'services the lab starts: argon2id | bcrypt | scrypt (default bcrypt, the seeds\')', env: 'TOLLBOOTH_HASH_ALGORITHM' },
  'bcrypt-cost': { group: 'service', arg: 'N', help: 'services the lab starts (default 10, the seeds\')', env: 'TOLLBOOTH_BCRYPT_COST' },
  'service-env': { group: 'service', arg: 'K=V', help: 'any other setting of services the lab starts (repeatable), e.g. TOLLBOOTH_HASH_THREADS=1', multiple: true },
  'database-url': { group: 'service', arg: 'URL', help: 'services the lab starts use this PostgreSQL instead of an embedded one' },
  replicas: { group: 'service', arg: 'N', help: 'N services behind HAProxy on one PostgreSQL (scale: a list, 1,2,3)' },
  'cpus-per-replica': { group: 'service', arg: 'C', help: 'each replica under a C-CPU cgroup quota (as root; otherwise none, with a warning)', parse: 'number' },
  out: { group: 'output', arg: 'DIR', help: 'where result.json, the CSV files and report.html go\n(default lab-results/<command>-<scenario>-<time>)' },
  quiet: { group: 'output', arg: '', help: 'no progress line' },
  'start-rate': { group: 'knee', arg: 'R', help: 'first offered rate (default: the scenario\'s)', parse: 'number', knee: 'startRate' },
  step: { group: 'knee', arg: 'P', help: 'growth per step (default 10%)', parse: 'fraction', knee: 'stepFactor' },
  'step-duration': { group: 'knee', arg: 'D', help: 'length of each step (default 10s)', parse: 'duration', knee: 'stepDurationMs' },
  'max-steps': { group: 'knee', arg: 'N', help: 'at most N steps (default 40)', parse: 'number', knee: 'maxSteps' },
  'max-rate': { group: 'knee', arg: 'R', help: 'never offer more than R/s', parse: 'number', knee: 'maxRate' },
  margin: { group: 'knee', arg: 'P', help: 'a step falls behind when achieved < offered x (1 - P) (default 10%)', parse: 'fraction', knee: 'throughputMargin' },
  'p99-limit': { group: 'knee', arg: 'D', help: 'a step fails when its p99 passes D (default 1s)', parse: 'duration', knee: 'p99LimitMs' },
  'error-limit': { group: 'knee', arg: 'P', help: 'a step fails when its error rate passes P (default 1%)', parse: 'fraction', knee: 'errorRateLimit' },
  strategies: { group: 'compare', arg: 'a,b,...', help: `default: ${allStrategies.join(',')}; with several scenarios: tollbooth` },
  clients: {
    group: 'compare',
    arg: 'polite,naive',
    help: 'measure each strategy with clients that wait out a 503\'s Retry-After (polite),\nthat retry at once (naive, as k6 VUs in the seeds\' scripts do), or both, in one run\n(default: polite, or naive with --no-retry-after; sizing: naive,polite)',
  },
  peak: { group: 'sizing', arg: 'R', help: 'the peak to plan replicas for, logins per second: 500 or 500/s' },
  p99: { group: 'sizing', arg: 'D', help: 'the p99 a login must keep at the peak: the login knee\'s p99 limit\n(default: the service\'s login deadline; 1s for a target)', parse: 'duration' },
  headroom: { group: 'sizing', arg: 'P', help: 'share of each replica\'s capacity kept free at the peak (default 30%)', parse: 'fraction' },
  'spare-replicas': { group: 'sizing', arg: 'N', help: 'replicas beyond what the peak needs, for a restart or a loss (default 1)', parse: 'number' },
  cpus: { group: 'sizing', arg: 'a,b,...', help: 'replica sizes to plan for, in CPUs (default 1,2,4,8)' },
  'database-cpus': { group: 'sizing', arg: 'a,b,...', help: 'database sizes to give the limit of, in CPUs (default 2,4,8,16)' },
  multiples: { group: 'sizing', arg: 'a,b,...', help: 'the curve\'s offered load, as multiples of the knee (default 0.5,1,1.5,2,3)' },
  flows: { group: 'sizing', arg: 'login,me', help: 'what to measure: logins, a crowd of GET /me, or both (default both)' },
  deployments: { group: 'sizing', arg: 'a,b', help: 'without --target: alone (the service alone), haproxy (behind HAProxy), or both (default alone,haproxy)' },
  patience: { group: 'sizing', arg: 'D', help: 'an arrival of a curve step gives up this long after it came (default 5s)', parse: 'duration' },
  'cheap-p99-limit': { group: 'sizing', arg: 'D', help: 'a GET /me knee step fails when its p99 passes D (default 250ms)', parse: 'duration' },
}

const headings: Record<Group, string> = {
  load: 'Load (closed model: virtual users; open model: an arrival rate):',
  service: 'Service (without --target the lab starts its own, on an embedded PostgreSQL, and stops it after):',
  output: 'Output:',
  knee: 'Knee:',
  compare: 'Compare:',
  sizing: 'Sizing (the knee flags set its knee searches; each starts at 0.7 of a short closed-loop storm):',
}

function flagHelp (group: Group): string {
  const lines = Object.entries(flags).filter(([, flag]) => flag.group === group)
    .map(([name, flag]) => `  ${`--${name} ${flag.arg}`.trimEnd().padEnd(25)}${flag.help.replaceAll('\n', `\n${' '.repeat(27)}`)}`)
  return [headings[group], ...lines].join('\n')
}

export const labUsage = `tollbooth lab: load the service like a crowd does, and see where it breaks

Usage:
  tollbooth lab run --scenario NAME [flags]       one load against one service
  tollbooth lab knee --scenario NAME [flags]      raise the arrival rate 10 % per step until the service falls behind
  tollbooth lab compare --scenario NAME [flags]   the same load against every hash strategy, side by side
  tollbooth lab compare --scenario A,B [flags]    several scenarios side by side (on tollbooth alone unless --strategies)
  tollbooth lab scale --scenario NAME --replicas 1,2,3 [flags]   the same load against 1, 2, 3 replicas
  tollbooth lab sizing [--peak 500/s --p99 1s] [flags]   the knee and the overload curve of logins and GET /me,
                                                  and the replicas a peak needs (docs/how-to/size-a-deployment.md)
  tollbooth lab report RESULT.json [--out DIR]    render the reports of a result again
  tollbooth lab scenarios                         list the built-in scenarios

Scenarios: ${Object.keys(builtInScenarios).join(', ')}, or a path to a .json or .js file (docs/how-to/run-the-lab.md).

${(['load', 'service', 'output', 'knee', 'compare', 'sizing'] as const).map(flagHelp).join('\n\n')}
`

type Values = Record<string, string | boolean | string[] | undefined>

function parse (args: string[]): { values: Values, positionals: string[] } {
  const options = Object.fromEntries(Object.entries(flags).map(([name, flag]) => [name, { type: flag.arg === '' ? 'boolean' : 'string', multiple: flag.multiple === true } as const]))
  try {
    return parseArgs({ args, options: { ...options, scenario: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true })
  } catch (err) {
    throw new LabError((err as Error).message)
  }
}

/** The common options, and the knee's criteria, from the parsed flags. */
function labOptionsOf (values: Values): { common: Omit<LabOptions, 'scenario'>, criteria: NonNullable<KneeOptions['criteria']> } {
  const load: Record<string, unknown> = {}
  const criteria: Record<string, unknown> = {}
  const env: Record<string, string> = {}
  for (const [name, flag] of Object.entries(flags)) {
    const text = values[name]
    if (typeof text !== 'string') continue
    const value = flag.parse === undefined ? text : parsers[flag.parse](text, `--${name}`)
    if (flag.load !== undefined) load[flag.load] = value
    if (flag.knee !== undefined) criteria[flag.knee] = value
    if (flag.env !== undefined) env[flag.env] = text
  }
  if (values['no-retry-after'] === true) load.honourRetryAfter = false
  for (const pair of (values['service-env'] as string[] | undefined) ?? []) {
    const eq = pair.indexOf('=')
    if (eq <= 0) throw new LabError(`--service-env takes KEY=VALUE, got "${pair}"`, 'service-env')
    env[pair.slice(0, eq)] ??= pair.slice(eq + 1)
  }
  const text = (name: string): string | undefined => values[name] as string | undefined
  const strategy = text('strategy')
  return {
    common: { target: text('target'), metricsUrl: text('metrics-url'), databaseUrl: text('database-url'), load: load as LoadOptions, serviceEnv: env, ...(strategy === undefined ? {} : { strategy }) },
    criteria,
  }
}

function list (text: string | boolean | string[] | undefined): string[] | undefined {
  return typeof text === 'string' ? text.split(',').map((item) => item.trim()).filter((item) => item !== '') : undefined
}

/** `lab sizing`'s own flags; the knee flags become its criteria. */
function sizingOptionsOf (values: Values, criteria: NonNullable<KneeOptions['criteria']>): Omit<SizingOptions, keyof LabOptions | 'load'> {
  const numbers = (name: string): number[] | undefined => list(values[name])?.map((item) => number(item, `--${name}`))
  const text = (name: string): string | undefined => values[name] as string | undefined
  const peak = text('peak')
  const p99 = text('p99')
  if (peak === undefined && p99 !== undefined) throw new LabError('--p99 goes with --peak: the p99 a login must keep at that peak', 'p99')
  const { maxRate, startRate, ...kneeCriteria } = criteria
  if (maxRate !== undefined || startRate !== undefined) throw new LabError('lab sizing starts each knee search from a short closed-loop storm: drop --start-rate and --max-rate', 'start-rate')
  const optional = <T>(name: string, value: T | undefined): Record<string, T> => (value === undefined ? {} : { [name]: value })
  return {
    ...optional('peak', peak === undefined ? undefined : { perSecond: number(peak.replace(/\/s$/, ''), '--peak'), ...optional('p99Ms', p99 === undefined ? undefined : parseDurationMs(p99, '--p99')) }),
    ...optional('headroom', text('headroom') === undefined ? undefined : parseFraction(text('headroom') ?? '', '--headroom')),
    ...optional('spareReplicas', text('spare-replicas') === undefined ? undefined : number(text('spare-replicas') ?? '', '--spare-replicas')),
    ...optional('cpusPerReplica', numbers('cpus')),
    ...optional('databaseCpus', numbers('database-cpus')),
    ...optional('multiples', numbers('multiples')),
    ...optional('flows', list(values.flows) as SizingOptions['flows']),
    ...optional('deployments', list(values.deployments) as SizingOptions['deployments']),
    ...optional('patienceMs', text('patience') === undefined ? undefined : parseDurationMs(text('patience') ?? '', '--patience')),
    ...optional('cheapP99LimitMs', text('cheap-p99-limit') === undefined ? undefined : parseDurationMs(text('cheap-p99-limit') ?? '', '--cheap-p99-limit')),
    ...optional('clients', list(values.clients) as SizingOptions['clients']),
    ...(Object.keys(kneeCriteria).length === 0 ? {} : { criteria: kneeCriteria }),
  }
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
      const line = [
        `[${label} ${String(sample.t).padStart(3)}s${sample.phase === undefined ? '' : ` ${sample.phase}`}]`,
        sample.vus === null || sample.vus === 0 ? `offered ${sample.offered}/s` : `vus ${sample.vus}`,
        `ok ${sample.achieved}/s`,
        `req ${sample.all.requests}/s`,
        `p95 ${formatMs(sample.all.latency.p95Ms)} ms`,
        `errors ${sample.all.requests - sample.all.ok}`,
        `in flight ${sample.inFlight}`,
        ...(sample.healthz === null ? [] : [`healthz p99 ${formatMs(sample.healthz.p99Ms)} ms`]),
        ...(server?.cpuCores == null ? [] : [`cpu ${(server.processTreeCpuCores ?? server.cpuCores).toFixed(2)}`]),
      ].join('  ')
      process.stderr.write(tty ? `\r\x1b[2K${line}` : `${line}\n`)
      pending = tty
    },
    log (line: string) {
      clear()
      if (!quiet) process.stderr.write(`${line}\n`)
    },
    end: clear,
  }
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
  const { values, positionals } = parse(rest)
  if (values.help === true) {
    process.stdout.write(labUsage)
    return
  }
  const out = values.out as string | undefined
  if (command === 'report') {
    const file = positionals[0]
    if (file === undefined) throw new LabError('lab report needs the path of a result.json')
    await finish(JSON.parse(fs.readFileSync(file, 'utf8')) as LabResult, out ?? path.dirname(file))
    return
  }
  if (!['run', 'knee', 'compare', 'scale', 'sizing'].includes(command)) throw new LabError(`unknown lab command "${command}": use run, knee, compare, scale, sizing, report or scenarios`)
  if (positionals.length > 0) throw new LabError(`unexpected argument "${positionals[0] ?? ''}"`)
  if (command === 'sizing') {
    await sizingMain(argv, values, out)
    return
  }
  const scenarios = list(values.scenario)
  const scenario = scenarios?.[0]
  if (scenarios === undefined || scenario === undefined) throw new LabError(`lab ${command} needs --scenario (${Object.keys(builtInScenarios).join(', ')}, or a file)`, 'scenario')
  if (scenarios.length > 1 && command !== 'compare') throw new LabError(`lab ${command} takes one scenario; several, side by side: lab compare --scenario ${scenarios.join(',')}`, 'scenario')
  const { common, criteria } = labOptionsOf(values)
  const replicaCounts = (list(values.replicas) ?? (values['cpus-per-replica'] === undefined ? [] : ['1'])).map((count) => number(count, '--replicas'))
  if (command === 'scale' ? replicaCounts.length === 0 : replicaCounts.length > 1) throw new LabError(command === 'scale' ? 'lab scale needs --replicas 1,2,3' : '--replicas takes one count here (a list: lab scale)', 'replicas')
  const cpusPerReplica = typeof values['cpus-per-replica'] === 'string' ? number(values['cpus-per-replica'], '--cpus-per-replica') : undefined
  if (replicaCounts.length > 0) common.replicas = { count: replicaCounts[0] ?? 1, cpusPerReplica }

  const { progress, abort, release } = interruptible(values)
  const options: LabOptions = {
    ...common, scenario, commandLine: ['tollbooth', 'lab', ...argv].join(' '), log: progress.log, onSecond: progress.onSecond, signal: abort.signal,
  }
  const outDir = outputFolder(out, `${command}-${scenarios.map((name) => path.basename(name).replace(/\.(json|m?js)$/, '')).join('+')}`)
  let result: LabResult
  try {
    const strategies = list(values.strategies)
    const clients = list(values.clients) as ClientKind[] | undefined
    result = command === 'run'
      ? await labRun(options)
      : command === 'scale'
        ? await labScale({ ...options, replicaCounts })
        : command === 'knee'
          ? await labKnee({ ...options, criteria })
          : await labCompare({ ...options, ...(scenarios.length > 1 ? { scenarios } : {}), ...(strategies === undefined ? {} : { strategies }), ...(clients === undefined ? {} : { clients }) })
  } finally {
    release()
  }
  await finish(result, outDir)
}

/** The progress line, and Ctrl-C as an abort that still writes what was measured (twice: quit at once). */
function interruptible (values: Values): { progress: ReturnType<typeof progressPrinter>, abort: AbortController, release: () => void } {
  const progress = progressPrinter(values.quiet === true)
  const abort = new AbortController()
  const onSignal = (): void => {
    if (abort.signal.aborted) process.exit(130)
    progress.log('interrupted: stopping the load and writing what was measured (Ctrl-C again to quit at once)')
    abort.abort()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return {
    progress,
    abort,
    release () {
      progress.end()
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
    },
  }
}

/** Timestamped folder under lab-results/ unless --out names one. */
function outputFolder (out: string | undefined, name: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').replace(/-\d+Z$/, 'Z')
  return out ?? path.join('lab-results', `${name}-${stamp}`)
}

async function sizingMain (argv: string[], values: Values, out: string | undefined): Promise<void> {
  if (values.scenario !== undefined) throw new LabError('lab sizing measures its own flows (--flows login,me), not a scenario', 'scenario')
  for (const name of ['vus', 'stages', 'rate', 'rate-stages', 'duration', 'think-time', 'strategy', 'replicas', 'cpus-per-replica', 'strategies', 'no-retry-after', 'source-addresses']) {
    if (values[name] !== undefined) throw new LabError(`lab sizing sets its own load and service: drop --${name}`, name)
  }
  const { common, criteria } = labOptionsOf(values)
  const sizing = sizingOptionsOf(values, criteria)
  const { progress, abort, release } = interruptible(values)
  let result: LabResult
  try {
    result = await labSizing({ ...common, ...sizing, commandLine: ['tollbooth', 'lab', ...argv].join(' '), log: progress.log, onSecond: progress.onSecond, signal: abort.signal })
  } finally {
    release()
  }
  await finish(result, outputFolder(out, 'sizing'))
}
