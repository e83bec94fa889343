/**
 * `npm run bench:haproxy`: a crowd of `GET /api/v1/me` at three times capacity, against the
 * service alone and behind HAProxy with the limits we recommend (deploy/haproxy/haproxy.cfg, as
 * the launcher generates them), in one command on one service process:
 *
 * 1. the closed-loop capacity C (the lab's `me-crowd`, 64 users) of the service alone, then
 *    through HAProxy;
 * 2. for each kind of clients, an open crowd of new arrivals at `--rate-factor` x C (the larger of
 *    the two; both sides get the same crowd), against the service alone, then behind HAProxy.
 *    `once`: each arrival one request; `naive`: a refused arrival tries again at once, `polite`:
 *    after Retry-After (up to three requests each; bench/scenarios/me-crowd-retrying.ts).
 *
 * Every service is new for its run and first serves a closed loop of 8 users for `--warm-seconds`
 * (5 s), not counted: a crowd meets a replica that was serving already, its code compiled and its
 * connections open, as a crowd meets a deployment.
 *
 * Each crowd's line: goodput (200s a second over the held part) against C alone and C through
 * HAProxy, the fraction of requests answered (200, or 503 with Retry-After; arrivals the lab could
 * not send count as unanswered), p99 of every answer and of the 200s, `/healthz` p99 as probed
 * where the clients go (and its floor, an empty server), behind HAProxy also as probed straight at
 * the first replica (where a kubelet's liveness probe and HAProxy's own checks go), HAProxy's
 * health checks that failed, and the CPU in cores of each part (the lab's generator included)
 * while the crowd ran.
 *
 *   npm run bench:haproxy                                   # naive and polite, one round
 *   npm run bench:haproxy -- --clients once,naive,polite --rounds 3 --out /tmp/haproxy-crowd
 *   npm run bench:haproxy -- --max-conn 16 --queue 16       # other limits than the recommended ones
 *   npm run bench:haproxy -- --rate-limit 0.8               # and a rate limit per replica, 0.8 x C alone
 *   npm run bench:haproxy -- --cfs-period-ms 100            # the replicas' CPU quota counted over Docker's and Kubernetes' 100 ms periods
 *   npm run bench:haproxy -- --warm-seconds 0               # each crowd meets a replica just started (its code not yet compiled)
 *   npm run bench:haproxy -- --generator go                 # every load sent by go-crowd (needs Go), on every core
 *
 * `--generator go` sends the same requests from packages/service/bench/go-crowd (bench/go-crowd.ts):
 * on two cores shared by the replicas, HAProxy and PostgreSQL, the lab's one generator thread
 * saturated before a polite crowd at 3 x C was all sent, and its CPU is the replicas' loss. The
 * `/healthz` floor is then not measured (—); the generator's column is go-crowd's CPU.
 *
 * Run it under `flock /tmp/tollbooth-measure.lock` on a shared machine (bench/README.md).
 */
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { machineFacts, recommendedHaproxyLimits, startDatabase, startReplicas, type HaproxyLimits, type ReplicaSet } from 'tollbooth/launcher'
import { labRun, seedServiceEnv, startHealthzProbe, type LoadOptions } from '../src/lab.js'
import { writeReports } from '../src/report/index.js'
import type { RunResult } from '../src/result.js'
import { buildGoCrowd, runGoCrowd, writeTokens, type GoCrowdLoad, type GoCrowdResult } from './go-crowd.js'
import { machineLine } from './machine.js'
import { postgresCpuSeconds, processCpu } from './proc.js'
import { attemptsPerArrival } from './scenarios/me-crowd-retrying.js'

const clientKinds = ['once', 'naive', 'polite'] as const
type ClientKind = (typeof clientKinds)[number]

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '1' },
    clients: { type: 'string', default: 'naive,polite' },
    'rate-factor': { type: 'string', default: '3' },
    'capacity-seconds': { type: 'string', default: '10' },
    'ramp-seconds': { type: 'string', default: '3' },
    'held-seconds': { type: 'string', default: '15' },
    replicas: { type: 'string', default: '1' },
    'cpus-per-replica': { type: 'string', default: '0.5' },
    'cfs-period-ms': { type: 'string', default: '10' },
    'max-conn': { type: 'string' },
    queue: { type: 'string' },
    'queue-timeout-ms': { type: 'string' },
    'rate-limit': { type: 'string' },
    'lab-workers': { type: 'string', default: '1' },
    'warm-seconds': { type: 'string', default: '5' },
    generator: { type: 'string', default: 'lab' },
    'go-connections': { type: 'string', default: '4000' },
    out: { type: 'string', default: path.join(process.cwd(), 'haproxy-crowd-results') },
  },
})

const clients = String(values.clients).split(',').map((kind) => {
  if (!(clientKinds as readonly string[]).includes(kind)) throw new Error(`--clients: a list of ${clientKinds.join(', ')}, not ${kind}`)
  return kind as ClientKind
})
const rateFactor = Number(values['rate-factor'])
const capacityMs = Number(values['capacity-seconds']) * 1000
const rampMs = Number(values['ramp-seconds']) * 1000
const heldMs = Number(values['held-seconds']) * 1000
const replicaCount = Number(values.replicas)
/** compose.yaml's replicas have half a CPU each; `0`: no quota (the replica shares the machine with HAProxy and the lab). */
const cpusPerReplica = Number(values['cpus-per-replica'])
/** The quota's CFS period: 10 ms as compose.yaml sets (`cpu_period`); Kubernetes and Docker's default is 100 ms, where a replica at its quota stalls up to 100 ms less its quota each time. */
const cfsPeriodMs = Number(values['cfs-period-ms'])
if (!(cfsPeriodMs >= 1 && cfsPeriodMs <= 1000)) throw new Error('--cfs-period-ms: 1 to 1000')
const labWorkers = Number(values['lab-workers'])
/** A closed loop of a few users against each fresh service before its measured run, not counted: a crowd that meets a replica already serving, not one just started. */
const warmMs = Number(values['warm-seconds']) * 1000
if (!(warmMs >= 0)) throw new Error('--warm-seconds: 0 or more')
const limits: HaproxyLimits = {
  maxConnPerReplica: Number(values['max-conn'] ?? recommendedHaproxyLimits.maxConnPerReplica),
  queuePerReplica: Number(values.queue ?? recommendedHaproxyLimits.queuePerReplica),
  queueTimeoutMs: Number(values['queue-timeout-ms'] ?? recommendedHaproxyLimits.queueTimeoutMs),
}
/** HAProxy's rate limit per replica, as a fraction of C alone (measured in each round); unset: none. */
const rateLimitFactor = values['rate-limit'] === undefined ? undefined : Number(values['rate-limit'])
if (rateLimitFactor !== undefined && !(rateLimitFactor > 0)) throw new Error('--rate-limit: a fraction of C alone, e.g. 0.8')
const out = path.resolve(String(values.out))
const generator = values.generator
if (generator !== 'lab' && generator !== 'go') throw new Error('--generator: lab or go')
/** go-crowd's keep-alive connections for an open crowd (its arrivals take them in turn; a wait for one counts in their latency): as many as the lab's crowd may open. */
const goConnections = Number(values['go-connections'])
if (!(Number.isInteger(goConnections) && goConnections >= 1)) throw new Error('--go-connections: a whole number above 0')
const endpoint = 'GET /me'

/**
 * The most arrivals the lab keeps under way. Sleeping polite clients hold a place too: about two
 * seconds' arrivals (a refused one waits out Retry-After, up to twice), so room for three, short
 * of the open files the lab may have (against a replica that stalls, every place is a socket).
 */
function arrivalsUnderWay (kind: ClientKind, rate: number): number {
  return kind === 'polite' ? Math.min(Math.max(12_000, 3 * rate), (machineFacts().openFiles ?? 20_000) - 4000) : 4000
}

/** The scenario of a kind of clients: the built-in crowd, or one whose refused arrivals come back. */
function scenarioOf (kind: ClientKind): string {
  return kind === 'once' ? 'me-crowd' : path.join(import.meta.dirname, 'scenarios', `me-crowd-${kind}.js`)
}

/** The services' settings: the lab's (bcrypt cost 10, immediate registration), throwaway secrets (the same for every service on the bench's databases), no drain. */
function makeServiceEnv (): NodeJS.ProcessEnv {
  const { DATABASE_URL_FILE: _u, TOLLBOOTH_JWT_SECRET_FILE: _j, TOLLBOOTH_KEY_ENCRYPTION_KEY_FILE: _k, UV_THREADPOOL_SIZE: _uv, ...inherited } = process.env
  return {
    ...inherited,
    ...seedServiceEnv,
    TOLLBOOTH_LOG_LEVEL: 'warn',
    TOLLBOOTH_SHUTDOWN_DRAIN_MS: '0',
    TOLLBOOTH_PUBLIC_URL: 'http://127.0.0.1',
    TOLLBOOTH_JWT_SECRET: randomBytes(32).toString('base64url'),
    TOLLBOOTH_KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    // go-crowd's accounts sign in once a round, for every service of the round (one database, one secret).
    TOLLBOOTH_ACCESS_TOKEN_TTL_SECONDS: '3600',
  }
}

/** CPU seconds so far of each part on this machine. */
interface CpuMark { epochMs: number, service: number, haproxy: number, postgres: number, lab: number }

function cpuMark (set: ReplicaSet, postgresPort: string): CpuMark {
  const lab = process.cpuUsage()
  return {
    epochMs: Date.now(),
    service: set.replicas.reduce((sum, replica) => sum + processCpu(replica.pid).total, 0),
    haproxy: processCpu(set.haproxyPid).total,
    postgres: postgresCpuSeconds(postgresPort),
    lab: (lab.user + lab.system) / 1e6,
  }
}

/** Cores each part used between two marks. */
function coresBetween (first: CpuMark, last: CpuMark): Record<'service' | 'haproxy' | 'postgres' | 'lab', number> {
  const seconds = Math.max(0.001, (last.epochMs - first.epochMs) / 1000)
  const cores = (key: Exclude<keyof CpuMark, 'epochMs'>): number => (last[key] - first[key]) / seconds
  return { service: cores('service'), haproxy: cores('haproxy'), postgres: cores('postgres'), lab: cores('lab') }
}

/** `/healthz` of one replica probed straight (behind HAProxy only): what a kubelet's liveness probe and HAProxy's own checks see. */
type ReplicaProbe = Awaited<ReturnType<ReturnType<typeof startHealthzProbe>['stop']>>

/** What a run's line shows, from either generator. */
interface Figures {
  /** 200s a second: over the held part of a crowd, over the whole of a closed loop. */
  goodput: number
  requests: number
  notSent: number
  ok: number
  /** 503s with Retry-After. */
  refused: number
  timeouts: number
  connectionErrors: number
  /** Statuses other than 2xx and 503, as `status: count`. */
  otherStatuses: string
  durationMs: number
  p99Ms: number | null | undefined
  okP99Ms: number | null | undefined
  healthzP99Ms: number | null | undefined
  healthzFloorP99Ms: number | null | undefined
  generator: string
}

interface Measured { figures: Figures, cores: ReturnType<typeof coresBetween>, failedChecks: number, replicaProbe: ReplicaProbe | undefined }

function labFigures (run: RunResult, closed: boolean): Figures {
  const held = run.seconds.filter((second) => second.t > rampMs / 1000 && second.t <= (rampMs + heldMs) / 1000)
  const stats = run.endpoints[endpoint]
  return {
    goodput: closed ? run.summary.achievedPerSecond : held.reduce((sum, second) => sum + (second.byEndpoint[endpoint]?.ok ?? 0), 0) / Math.max(1, held.length),
    requests: stats?.requests ?? 0,
    notSent: run.seconds.reduce((sum, second) => sum + second.dropped, 0),
    ok: stats?.ok ?? 0,
    refused: stats?.refusedLatency?.count ?? 0,
    timeouts: stats?.errors.timeouts ?? 0,
    connectionErrors: stats?.errors.connectionErrors ?? 0,
    otherStatuses: Object.entries(stats?.errors.byStatus ?? {}).filter(([status]) => status !== '503').map(([status, count]) => `${status}: ${count}`).join(', '),
    durationMs: run.durationMs,
    p99Ms: stats?.latency.p99Ms,
    okP99Ms: stats?.okLatency.p99Ms,
    healthzP99Ms: run.healthz?.p99Ms,
    healthzFloorP99Ms: run.healthzFloor?.p99Ms,
    generator: `${fixed(run.generator.cpuCores, 2)}${run.generator.saturated ? ' saturated' : ''}`,
  }
}

function goFigures (result: GoCrowdResult, durationMs: number): Figures {
  const statuses = Object.entries(result.byStatus).map(([status, count]) => [Number(status), count] as const)
  return {
    goodput: result.servedPerSecond,
    requests: result.requests,
    notSent: result.notSent,
    ok: statuses.filter(([status]) => status >= 200 && status < 300).reduce((sum, [, count]) => sum + count, 0),
    refused: result.refusedWithRetryAfter,
    timeouts: result.timeouts,
    connectionErrors: result.connectionErrors,
    otherStatuses: statuses.filter(([status]) => (status < 200 || status >= 300) && status !== 503).map(([status, count]) => `${status}: ${count}`).join(', '),
    durationMs,
    p99Ms: result.latency.p99Ms,
    okP99Ms: result.okLatency.p99Ms,
    healthzP99Ms: result.healthz.p99Ms,
    healthzFloorP99Ms: undefined,
    generator: `go ${fixed(result.generatorCores, 2)}`,
  }
}

/** One lab run against `target`, the CPU of every part read at its first and last second of load. */
async function measure (set: ReplicaSet, postgresPort: string, dir: string, scenario: string, target: string, load: LoadOptions): Promise<Measured> {
  let first: CpuMark | undefined
  let last: CpuMark | undefined
  const downsBefore = await set.failedChecks()
  const replica = target === set.url ? set.replicas[0]?.url : undefined
  // From the load's first second, as the run's own probe: the setup's registrations are not the crowd.
  let replicaProber: ReturnType<typeof startHealthzProbe> | undefined
  const result = await labRun({
    scenario,
    target,
    metricsUrl: set.replicas[0]?.url,
    // Ten signed-in accounts share the crowd: setup costs ten registrations and ten logins a run.
    load: { workers: labWorkers, accounts: 10, ...load },
    onSecond: () => {
      last = cpuMark(set, postgresPort)
      first ??= last
      if (replica !== undefined) replicaProber ??= startHealthzProbe({ url: replica })
    },
  }).catch(async (err: unknown) => {
    // A run that failed stops the replica's prober too: its thread would keep the bench from exiting.
    await replicaProber?.stop().catch(() => undefined)
    throw err
  })
  const replicaProbe = await replicaProber?.stop()
  await writeReports(dir, result)
  const [run] = result.runs
  if (run === undefined || first === undefined || last === undefined) throw new Error(`${dir}: no run (${result.warnings.join('; ')})`)
  return { figures: labFigures(run, 'vus' in load), cores: coresBetween(first, last), failedChecks: await set.failedChecks() - downsBefore, replicaProbe }
}

/** One go-crowd run against `target`, the CPU of every part read from its start to the end of its load (a polite crowd's last retries after). */
async function measureGo (binary: string, set: ReplicaSet, postgresPort: string, dir: string, target: string, tokensFile: string, load: GoCrowdLoad): Promise<Measured> {
  const downsBefore = await set.failedChecks()
  const replica = target === set.url ? set.replicas[0]?.url : undefined
  const replicaProber = replica === undefined ? undefined : startHealthzProbe({ url: replica })
  const loadMs = (load.mode === 'open' ? load.rampMs : 0) + load.durationMs
  const first = cpuMark(set, postgresPort)
  let last: CpuMark | undefined
  const lastMark = setTimeout(() => { last = cpuMark(set, postgresPort) }, loadMs)
  let result: GoCrowdResult
  try {
    result = await runGoCrowd(binary, target, tokensFile, load)
  } catch (err) {
    await replicaProber?.stop().catch(() => undefined)
    throw err
  } finally {
    clearTimeout(lastMark)
  }
  const replicaProbe = await replicaProber?.stop()
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, 'go-crowd.json'), `${JSON.stringify(result, null, 2)}\n`)
  return { figures: goFigures(result, loadMs), cores: coresBetween(first, last ?? cpuMark(set, postgresPort)), failedChecks: await set.failedChecks() - downsBefore, replicaProbe }
}

const serviceEnv = makeServiceEnv()

const fixed = (value: number | null | undefined, digits: number): string => value === null || value === undefined ? '—' : value.toFixed(digits)

/** One crowd's line of the table. */
function crowdLine (round: number, where: string, kind: ClientKind, offered: number, capacityAlone: number, capacityHaproxy: number, { figures: f, cores, failedChecks, replicaProbe }: Measured): string {
  const answered = (f.ok + f.refused) / Math.max(1, f.requests + f.notSent)
  const unanswered = f.requests + f.notSent - f.ok - f.refused
  return `| ${round} | ${where} | ${kind} | ${Math.round(offered)} /s | ${Math.round(f.goodput)} /s | ${fixed(f.goodput / capacityAlone, 3)} | ${fixed(f.goodput / capacityHaproxy, 3)} | ${fixed(answered, 4)} (${unanswered} not: ${f.notSent} not sent, ${f.timeouts} timeouts, ${f.connectionErrors} conn.${f.otherStatuses === '' ? '' : `, ${f.otherStatuses}`}) | ${Math.round(f.requests / Math.max(1, f.durationMs / 1000))} /s | ${fixed(f.p99Ms, 0)} / ${fixed(f.okP99Ms, 0)} ms | ${fixed(f.healthzP99Ms, 1)} ms (${fixed(f.healthzFloorP99Ms, 1)}) | ${replicaProbe === undefined ? '—' : `${fixed(replicaProbe.healthz.p99Ms, 1)} ms${replicaProbe.failures > 0 ? `, ${replicaProbe.failures} failed` : ''}`} | ${failedChecks} | ${fixed(cores.service, 2)} | ${fixed(cores.haproxy, 2)} | ${fixed(cores.postgres, 2)} | ${fixed(cores.lab, 2)} (${f.generator}) |`
}

/** What a run sends, for either generator: a closed loop of users, or a crowd of new arrivals. */
type BenchLoad = { model: 'closed', vus: number, durationMs: number } | { model: 'open', clients: ClientKind, rate: number }

/** With `--generator go`: the folder of go-crowd's binary and of its accounts' tokens, removed at exit, and the binary. */
async function goCrowd (): Promise<{ dir: string, binary: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-go-crowd-'))
  process.on('exit', () => { fs.rmSync(dir, { recursive: true, force: true }) })
  return { dir, binary: await buildGoCrowd(dir) }
}
const go = generator === 'go' ? await goCrowd() : undefined

function labLoad (load: BenchLoad): { scenario: string, options: LoadOptions } {
  if (load.model === 'closed') return { scenario: 'me-crowd', options: { vus: load.vus, durationMs: load.durationMs } }
  return { scenario: scenarioOf(load.clients), options: { rate: 100, rateStages: [{ durationMs: rampMs, target: load.rate }, { durationMs: heldMs, target: load.rate }], maxInFlight: arrivalsUnderWay(load.clients, load.rate) } }
}

function goLoad (load: BenchLoad): GoCrowdLoad {
  if (load.model === 'closed') return { mode: 'closed', vus: load.vus, durationMs: load.durationMs }
  // A polite arrival waiting out Retry-After holds a timer, not a socket: room for ten seconds of arrivals.
  return { mode: 'open', rate: load.rate, rampMs, durationMs: heldMs, retry: load.clients, attempts: load.clients === 'once' ? 1 : attemptsPerArrival, maxInFlight: Math.max(4000, 10 * load.rate), connections: goConnections }
}

console.log(`${machineLine()}, load average ${(await import('node:os')).loadavg().map((load) => load.toFixed(1)).join(' ')}`)
console.log(`HAProxy limits per replica: maxconn ${limits.maxConnPerReplica}, refused past ${limits.queuePerReplica} waiting, timeout queue ${limits.queueTimeoutMs} ms${JSON.stringify(limits) === JSON.stringify(recommendedHaproxyLimits) ? ' (the recommended ones)' : ''}; ${replicaCount} replica(s), ${cpusPerReplica > 0 ? `${cpusPerReplica} CPU each, CFS period ${cfsPeriodMs} ms` : 'no CPU quota'}`)
console.log(`crowd: ${rateFactor} x the larger of C alone and C through HAProxy, ${rampMs / 1000} s ramp then ${heldMs / 1000} s held, each service first warmed ${warmMs / 1000} s by 8 closed-loop users; naive and polite clients send up to ${attemptsPerArrival} requests an arrival; C: 64 closed-loop users, ${capacityMs / 1000} s; sent by ${go === undefined ? 'the lab' : `go-crowd (${goConnections} connections for a crowd)`}\n`)
console.log('| round | where | clients | new arrivals | goodput | / C alone | / C HAProxy | answered | requests sent | p99 all / 200s | `/healthz` p99 (floor) | at a replica | checks failed | service cores | HAProxy | PostgreSQL | lab (generator) |')
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for (let round = 1; round <= Number(values.rounds); round++) {
  const dir = path.join(out, `round-${round}`)
  const database = await startDatabase({ name: 'tollbooth_lab', label: 'haproxy-crowd', nonDurable: true })
  const postgresPort = new URL(database.url).port
  /**
   * One lab run on services started for it alone: a crowd leaves a service it overwhelmed busy
   * with what it was sent (thousands of connections) for seconds after, so no run follows another
   * on the same process.
   */
  const fresh = async (name: string, load: BenchLoad, behindHaproxy: boolean, haproxyLimits: HaproxyLimits = limits): Promise<Measured> => {
    const set = await startReplicas({ count: replicaCount, ...(cpusPerReplica > 0 ? { cpusPerReplica, cfsPeriodMs } : {}), env: serviceEnv, databaseUrl: database.url, haproxyLimits })
    try {
      for (const warning of set.warnings) console.log(`warning: ${warning}`)
      const target = behindHaproxy ? set.url : set.replicas[0]?.url ?? ''
      if (go === undefined) {
        if (warmMs > 0) await labRun({ scenario: 'me-crowd', target, load: { workers: labWorkers, accounts: 10, vus: 8, durationMs: warmMs } })
        const { scenario, options } = labLoad(load)
        return await measure(set, postgresPort, path.join(dir, name), scenario, target, options)
      }
      // go-crowd's accounts: signed in once a round, on its first service (bench:haproxy's tokens last an hour).
      const tokensFile = path.join(go.dir, `tokens-round-${round}.txt`)
      if (!fs.existsSync(tokensFile)) await writeTokens(target, 10, tokensFile)
      if (warmMs > 0) await runGoCrowd(go.binary, target, tokensFile, { mode: 'closed', vus: 8, durationMs: warmMs })
      return await measureGo(go.binary, set, postgresPort, path.join(dir, name), target, tokensFile, goLoad(load))
    } finally {
      await set.stop()
    }
  }
  try {
    const closed: BenchLoad = { model: 'closed', vus: 64, durationMs: capacityMs }
    // A fresh database serves its first seconds slower (its caches, its statistics): a closed
    // loop before the measured ones, not counted, so that C before the crowds is not read cold.
    await fresh('warm-up', closed, false)
    const capacityAloneRun = await fresh('capacity-alone', closed, false)
    const capacityHaproxyRun = await fresh('capacity-haproxy', closed, true)
    // Capacity is what the closed loop got served (200s), not every answer.
    const capacityAlone = capacityAloneRun.figures.goodput
    const capacityHaproxy = capacityHaproxyRun.figures.goodput
    console.log(`| ${round} | C alone ${Math.round(capacityAlone)} /s (cores: service ${fixed(capacityAloneRun.cores.service, 2)}, lab ${fixed(capacityAloneRun.cores.lab, 2)}); C through HAProxy ${Math.round(capacityHaproxy)} /s (service ${fixed(capacityHaproxyRun.cores.service, 2)}, HAProxy ${fixed(capacityHaproxyRun.cores.haproxy, 2)}, lab ${fixed(capacityHaproxyRun.cores.lab, 2)}) | | | | | | | | | | | | | | |`)
    // Three times the larger C: a replica behind HAProxy's connection limit can serve more than one
    // taking every connection itself, and a crowd at three times the smaller would be a lighter one.
    const rate = Math.round(rateFactor * Math.max(capacityAlone, capacityHaproxy))
    const crowdLimits: HaproxyLimits = rateLimitFactor === undefined ? limits : { ...limits, ratePerReplica: rateLimitFactor * capacityAlone }
    if (crowdLimits.ratePerReplica !== undefined) console.log(`| ${round} | HAProxy's rate limit: ${Math.round(crowdLimits.ratePerReplica)} capped requests a second per replica (${rateLimitFactor} x C alone) | | | | | | | | | | | | | | |`)
    for (const kind of clients) {
      const crowd: BenchLoad = { model: 'open', clients: kind, rate }
      for (const [where, behindHaproxy] of [['alone', false], ['HAProxy', true]] as const) {
        console.log(crowdLine(round, where, kind, rate, capacityAlone, capacityHaproxy, await fresh(`${kind}-${where.toLowerCase()}`, crowd, behindHaproxy, crowdLimits)))
      }
    }
    // The machine's speed can move during a round (a shared machine): the capacity again, after the crowds.
    const after = (await fresh('capacity-alone-after', closed, false)).figures.goodput
    const moved = Math.abs(after - capacityAlone) / Math.min(after, capacityAlone)
    console.log(`| ${round} | C alone after the crowds ${Math.round(after)} /s: ${moved > 0.1 ? `moved ${Math.round(100 * moved)} %, this round's ratios are not reliable` : 'steady'} | | | | | | | | | | | | | | |`)
  } finally {
    await database.stop()
  }
}
console.log(`\nreports: ${out}`)
