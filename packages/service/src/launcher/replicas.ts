/**
 * N `tollbooth serve` processes on one PostgreSQL, each under its own CPU quota, behind HAProxy:
 * the lab's stand-in for "N pods x C CPU behind an ingress". Fixed ports, so a restarted replica
 * comes back where HAProxy expects it.
 */
import { randomBytes } from 'node:crypto'
import net from 'node:net'
import { startServe, type HarnessOptions, type ServeProcess } from './serve.js'
import { createCpuQuota, type CpuQuotaGroup } from './cgroup.js'
import { startHaproxy, type HaproxyLimits, type RunningHaproxy } from './haproxy.js'

export interface StartReplicasOptions {
  /** How many services; at least 1. */
  count: number
  /** Each replica's CPU quota in CPUs (0.5: 50 ms of every 100 ms); undefined: no quota. */
  cpusPerReplica?: number
  /** The quota's CFS period in ms (default 100, as Kubernetes and Docker). */
  cfsPeriodMs?: number
  /** The services' environment (settings, secrets); HOST, PORT and DATABASE_URL are set here. */
  env: NodeJS.ProcessEnv
  /** The PostgreSQL every replica uses. */
  databaseUrl: string
  startTimeoutMs?: number
  /** The lab's research harness in every replica (`startServe`'s). */
  harness?: HarnessOptions
  /** HAProxy's limits on the capped requests; default `recommendedHaproxyLimits` (deploy/haproxy/haproxy.cfg's). */
  haproxyLimits?: HaproxyLimits
}

export interface Replica {
  name: string
  url: string
  /** Where its /metrics is: its admin listener when TOLLBOOTH_ADMIN_PORT is set, else `url`. */
  metricsUrl: string
  /** The process started: it changes on restart. */
  pid: number
  /** What the replica reports on /metrics: its hash threads and the CPU budget it sized them to. */
  hashThreads: number | null
  cpuBudget: string | null
  logTail (): string
  /** A rolling restart: SIGTERM (it drains, then exits), start again on the same port and cgroup, resolve once HAProxy sends it traffic. */
  restart (): Promise<void>
}

export interface ReplicaSet {
  /** HAProxy's address: where clients go. */
  url: string
  /** The HAProxy process (its CPU is the load balancer's). */
  haproxyPid: number
  /** Health checks of the replicas that failed so far, as HAProxy counts them. */
  failedChecks (): Promise<number>
  /** Where the lab scrapes: through HAProxy (`url`), or the first replica's admin listener when TOLLBOOTH_ADMIN_PORT is set. */
  metricsUrl: string
  replicas: Replica[]
  /** How the quotas were applied: `cgroup-v2`, `cgroup-v1`, or `none` (see `warnings`). */
  quota: 'cgroup-v2' | 'cgroup-v1' | 'none'
  cpusPerReplica: number | null
  warnings: string[]
  stop (): Promise<void>
}

/** A port of 127.0.0.1 free now. */
export async function freePort (): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}

/** Hash threads and CPU budget from the replica's /metrics. */
async function poolOf (url: string): Promise<{ hashThreads: number | null, cpuBudget: string | null }> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const threads = /^tollbooth_hash_pool_threads(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1]
  const info = /^tollbooth_hash_pool_info\{([^}]*)\}/m.exec(text)?.[1] ?? ''
  const label = (name: string): string | undefined => new RegExp(`${name}="([^"]*)"`).exec(info)?.[1]
  const budget = label('cpu_budget')
  return {
    hashThreads: threads === undefined ? null : Number(threads),
    cpuBudget: budget === undefined ? null : `${budget} (${label('cpu_budget_source') ?? '?'})`,
  }
}

export async function startReplicas (options: StartReplicasOptions): Promise<ReplicaSet> {
  const { count, cpusPerReplica } = options
  if (!Number.isInteger(count) || count < 1) throw new TypeError(`count must be a whole number from 1, got ${count}`)
  if (cpusPerReplica !== undefined && (!Number.isFinite(cpusPerReplica) || cpusPerReplica <= 0)) throw new TypeError(`cpusPerReplica must be above 0, got ${cpusPerReplica}`)
  const warnings: string[] = []
  const tag = randomBytes(4).toString('hex')
  const groups: Array<CpuQuotaGroup | undefined> = []
  const processes: Array<ServeProcess | undefined> = []
  let haproxy: RunningHaproxy | undefined

  const stop = async (): Promise<void> => {
    await haproxy?.stop()
    await Promise.all(processes.map(async (serve) => await serve?.stop()))
    for (const group of groups) group?.remove()
  }

  try {
    let quota: ReplicaSet['quota'] = 'none'
    if (cpusPerReplica !== undefined) {
      for (let index = 0; index < count; index++) {
        const outcome = createCpuQuota(`tollbooth-${tag}-r${index + 1}`, cpusPerReplica, options.cfsPeriodMs === undefined ? {} : { periodUs: Math.round(options.cfsPeriodMs * 1000) })
        if (!outcome.ok) {
          warnings.push(`replicas run WITHOUT a CPU quota: ${outcome.reason}; each sizes its hash pool to the whole machine and they share its cores`)
          break
        }
        groups.push(outcome.group)
        quota = outcome.group.kind
      }
      if (groups.length < count) {
        for (const group of groups) group?.remove()
        groups.length = 0
        quota = 'none'
      }
    }
    const ports = await Promise.all(Array.from({ length: count }, freePort))
    const names = ports.map((_, index) => `r${index + 1}`)
    // DATABASE_URL is set here; an inherited DATABASE_URL_FILE would make the service refuse both.
    const { DATABASE_URL_FILE: _inheritedUrlFile, ...env } = options.env
    const launch = async (index: number): Promise<ServeProcess> => {
      const procsFile = groups[index]?.procsFile
      return await startServe({
        // An admin port asked for becomes one of each replica's own (0: any free one), never one they all fight for.
        env: { ...env, HOST: '127.0.0.1', PORT: String(ports[index]), DATABASE_URL: options.databaseUrl, ...(options.env.TOLLBOOTH_ADMIN_PORT === undefined ? {} : { TOLLBOOTH_ADMIN_PORT: '0' }) },
        ...(procsFile === undefined ? {} : { cgroupProcsFile: procsFile }),
        ...(options.startTimeoutMs === undefined ? {} : { startTimeoutMs: options.startTimeoutMs }),
        ...(options.harness === undefined ? {} : { harness: options.harness }),
      })
    }
    // Together, as a deployment starts them: migrations run once under an advisory lock.
    const started = await Promise.allSettled(names.map(async (_, index) => { processes[index] = await launch(index) }))
    const failed = started.find((outcome) => outcome.status === 'rejected')
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason

    haproxy = await startHaproxy({ port: await freePort(), servers: names.map((name, index) => ({ name, port: ports[index] ?? 0 })), limits: options.haproxyLimits })
    await haproxy.waitFor(names, true)
    const running = haproxy

    const replicas = await Promise.all(names.map(async (name, index): Promise<Replica> => {
      const serve = (): ServeProcess => {
        const current = processes[index]
        if (current === undefined) throw new Error(`replica ${name} is not running`)
        return current
      }
      const replica: Replica = {
        name,
        url: serve().url,
        metricsUrl: serve().metricsUrl,
        pid: serve().pid,
        ...await poolOf(serve().metricsUrl),
        logTail: () => serve().logTail(),
        async restart () {
          await serve().stop()
          processes[index] = undefined
          processes[index] = await launch(index)
          replica.pid = serve().pid
          replica.metricsUrl = serve().metricsUrl
          Object.assign(replica, await poolOf(serve().metricsUrl))
          await running.waitFor([name], true)
        },
      }
      return replica
    }))
    if (quota !== 'none' && cpusPerReplica !== undefined) {
      const expected = Math.max(1, Math.ceil(cpusPerReplica))
      for (const replica of replicas) {
        if (replica.hashThreads !== null && replica.hashThreads > expected && options.env.TOLLBOOTH_HASH_THREADS === undefined) {
          warnings.push(`${replica.name} runs ${replica.hashThreads} hash threads under a ${cpusPerReplica}-CPU quota (budget ${replica.cpuBudget ?? '?'}): it did not detect its quota`)
        }
      }
    }
    const metricsUrl = options.env.TOLLBOOTH_ADMIN_PORT === undefined ? running.url : (replicas[0]?.metricsUrl ?? running.url)
    return { url: running.url, haproxyPid: running.pid, failedChecks: async () => [...(await running.serverStats()).values()].reduce((sum, server) => sum + server.failedChecks, 0), metricsUrl, replicas, quota, cpusPerReplica: quota === 'none' ? null : (cpusPerReplica ?? null), warnings, stop }
  } catch (err) {
    await stop()
    throw err
  }
}
