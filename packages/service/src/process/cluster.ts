/**
 * Several processes on one port (node:cluster): `serve --workers N`, sharing ONE CPU budget
 * (worker-budget.ts) so cheap requests scale with cores while hashing stays within the CPU; or,
 * under the lab's harness (`processPerCpu`), the Piscina article's one process per CPU. The
 * primary owns the database and migrations, /metrics aggregates every worker (cluster-metrics.ts),
 * a worker that dies is replaced, and SIGTERM drains every worker before they close.
 */
import cluster, { type Worker } from 'node:cluster'
import type pino from 'pino'
import type { Config } from '../config/index.js'
import { detectCpuBudget, missingHashMallocEnv } from '../machine/index.js'
import { createError } from '../errors.js'
import { startAdminServer, type AdminServer } from './admin.js'
import { primaryMetrics, serveClusterMetrics } from '../metrics/index.js'
import { startDatabase } from './database.js'
import { dataFolderKeyEncryptionKey } from '../accounts/index.js'
import { jwtSecretOf, startService, type RunningService, type ServiceHarness } from './start.js'
import { splitCpuBudget } from './worker-budget.js'

const workerConfigEnv = 'TOLLBOOTH_CLUSTER_WORKER_CONFIG'
const shutdownType = 'tollbooth:shutdown'
const startedType = 'tollbooth:started'

/** From the primary to a worker: stop, after a drain (SIGTERM) or at once (SIGINT, a failed start). */
interface ShutdownMessage { type: typeof shutdownType, drain: boolean }

/** From a worker to the primary: started, its listening copies included (node's 'listening' comes before them). */
interface StartedMessage { type: typeof startedType, port: number }

function isShutdown (message: unknown): message is ShutdownMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === shutdownType
}

function isStarted (message: unknown): message is StartedMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === startedType
}

/** Resolves with the port once `worker` has started all the way; rejects if it exits first. */
async function whenStarted (worker: Worker): Promise<number> {
  return await new Promise((resolve, reject) => {
    const onMessage = (message: unknown): void => {
      if (!isStarted(message)) return
      worker.off('message', onMessage)
      resolve(message.port)
    }
    worker.on('message', onMessage)
    worker.once('exit', (code) => { reject(new Error(`cluster worker exited with code ${code} before listening`)) })
  })
}

export function isClusterWorker (): boolean {
  return cluster.isWorker && process.env[workerConfigEnv] !== undefined
}

/** In a worker: the config the primary resolved (database URL, key, hash threads). */
export function clusterWorkerConfig (): Config {
  return JSON.parse(process.env[workerConfigEnv] ?? '{}') as Config
}

/** Processes `serve` runs: `--workers`' count, or one per CPU under a harness that asks for it; 1 means no cluster at all. */
export function clusterSize (config: Pick<Config, 'hashThreads' | 'workers'>, harness?: ServiceHarness): number {
  const budget = config.hashThreads ?? detectCpuBudget().cpus
  if (harness?.processPerCpu === true) return budget
  return splitCpuBudget(budget, config.workers).workers
}

export async function startClusterWorker (log: pino.Logger, harness?: ServiceHarness): Promise<RunningService> {
  const started = startService(clusterWorkerConfig(), { logger: log.child({ worker: cluster.worker?.id }), listeningMessage: 'cluster worker listening', clusterWorker: true, ...(harness === undefined ? {} : { harness }) })
  // Listened for before the start ends: a shutdown or a signal that comes while it starts waits
  // for it, then closes what it opened.
  let stopping: Promise<void> | undefined
  const stop = (drain: boolean): void => {
    stopping ??= started
      .then(async (service) => {
        if (drain) await service.drain()
        await service.close()
      })
      .then(() => process.exit(0), (err: unknown) => {
        log.error({ err }, 'cluster worker did not stop cleanly')
        process.exit(1)
      })
  }
  process.on('message', (message: unknown) => { if (isShutdown(message)) stop(message.drain) })
  // A worker signalled on its own (kill <pid>) drains too; the primary then replaces it.
  process.on('SIGTERM', () => { stop(true) })
  process.on('SIGINT', () => {}) // the primary decides; Ctrl-C reaches the whole group
  process.on('disconnect', () => { stop(false) }) // the primary is gone
  const service = await started
  process.send?.({ type: startedType, port: Number(new URL(service.url).port) } satisfies StartedMessage)
  return service
}

export interface RunningCluster {
  url: string
  /** The admin listener (TOLLBOOTH_ADMIN_PORT), in the primary: the workers' metrics aggregated. */
  adminUrl: string | undefined
  workers: number
  /** Hash threads in each worker's pool (undefined: the harness executor's own default). */
  threadsPerWorker: number | undefined
  /** Tells every worker to drain (readiness off, still serving) and resolves after TOLLBOOTH_SHUTDOWN_DRAIN_MS. */
  drain (): Promise<void>
  /** Stops every worker (at once, unless drain() told them first), waits for them, stops the database. */
  close (): Promise<void>
}

/** A replacement for a worker that died within this long of its start waits before it is forked. */
const quickDeathMs = 10_000
const maxRestartDelayMs = 30_000

export async function startClusterPrimary (config: Config, log: pino.Logger, harness?: ServiceHarness): Promise<RunningCluster> {
  const strategyCluster = harness?.processPerCpu === true
  const budget = config.hashThreads ?? detectCpuBudget().cpus
  const split = splitCpuBudget(budget, config.workers)
  const workerCount = strategyCluster ? budget : split.workers
  const threadsPerWorker = strategyCluster ? undefined : split.threadsPerWorker
  if (!strategyCluster && split.oversubscribed) {
    log.warn({ workers: split.workers, cpuBudget: split.budget, threadsPerWorker }, `${split.workers} workers on a CPU budget of ${split.budget}: one hash thread each, so the hash pool is oversubscribed (more hash threads than CPUs)`)
  }

  const database = await startDatabase(config, log)
  // HS256 needs one secret for every worker, found (or made) here once; the other algorithms' keys live in PostgreSQL.
  const jwtSecret = jwtSecretOf(config)
  // One process per CPU: hashThreads counted the processes; inside each, the executor keeps its own size.
  // The workers see the embedded database's URL as DATABASE_URL: its key-encryption key (the data folder's) goes with it, as the HS256 secret does.
  const keyEncryptionKey = config.keyEncryptionKey ?? (database.embedded === undefined ? undefined : dataFolderKeyEncryptionKey(config.dataDir, log).toString('base64'))
  const workerConfig: Config = { ...config, databaseUrl: database.url, jwtSecret, keyEncryptionKey, hashThreads: threadsPerWorker, workers: workerCount }
  const stopServingMetrics = serveClusterMetrics()

  let started = false
  let stopping = false
  let drainSent = false
  const workers = new Set<Worker>()
  const listeningWorkers = new Set<Worker>()
  let admin: AdminServer | undefined
  const forkedAt = new WeakMap<Worker, number>()
  let quickDeaths = 0
  let restartTimer: NodeJS.Timeout | undefined

  const fork = (): Worker => {
    // The workers hash: glibc's malloc settings for that, unless set already or turned off (machine/malloc-env.ts).
    const worker = cluster.fork({ ...(config.mallocSettings === 'off' ? {} : missingHashMallocEnv(process.env)), [workerConfigEnv]: JSON.stringify(workerConfig) })
    workers.add(worker)
    forkedAt.set(worker, Date.now())
    whenStarted(worker).then(() => { if (!worker.isDead()) listeningWorkers.add(worker) }, () => {})
    return worker
  }
  const onExit = (worker: Worker, code: number, signal: string): void => {
    workers.delete(worker)
    listeningWorkers.delete(worker)
    if (stopping || !started) return
    const lived = Date.now() - (forkedAt.get(worker) ?? 0)
    quickDeaths = lived < quickDeathMs ? quickDeaths + 1 : 0
    // A worker that keeps dying at start (its database gone, say) is retried ever more slowly, not in a loop.
    const delayMs = quickDeaths <= 1 ? 0 : Math.min(maxRestartDelayMs, 1000 * 2 ** (quickDeaths - 2))
    log.error({ worker: worker.id, pid: worker.process.pid, code, signal, restartInMs: delayMs }, 'cluster worker died: starting a replacement')
    restartTimer = setTimeout(() => {
      restartTimer = undefined
      if (stopping) return
      const replacement = fork()
      whenStarted(replacement).then(() => { log.info({ worker: replacement.id, pid: replacement.process.pid }, 'replacement cluster worker listening') }, () => {})
    }, delayMs)
  }
  cluster.on('exit', onExit)

  const tell = (drain: boolean): void => {
    for (const worker of workers) {
      const terminate = (): void => { if (!worker.isDead()) worker.process.kill('SIGTERM') }
      if (!worker.isConnected()) {
        terminate()
        continue
      }
      // A worker can die between the check and the write (EPIPE): then a signal, never a crash of the primary.
      try {
        worker.send({ type: shutdownType, drain } satisfies ShutdownMessage, (err: Error | null) => { if (err !== null) terminate() })
      } catch {
        terminate()
      }
    }
  }
  const close = async (): Promise<void> => {
    stopping = true
    clearTimeout(restartTimer)
    const exits = [...workers].filter((worker) => !worker.isDead()).map(async (worker) => await new Promise((resolve) => worker.once('exit', resolve)))
    if (!drainSent) tell(false)
    await Promise.all(exits)
    await admin?.close()
    stopServingMetrics()
    cluster.off('exit', onExit)
    await database.stop()
  }
  const drain = async (): Promise<void> => {
    stopping = true
    clearTimeout(restartTimer)
    drainSent = true
    tell(true)
    // The workers drain as long; close() then waits for them to finish their requests and exit.
    await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs))
  }

  // `--workers`: each worker accepts for itself on the one socket, through its own descriptors
  // (acceptors.ts). Round robin, node's default, has the primary hand each connection over IPC one
  // at a time, so a crowd of new connections waits in the primary. One process per CPU keeps round
  // robin, as the Piscina article ran it. Node reads it at the first fork.
  cluster.schedulingPolicy = strategyCluster ? cluster.SCHED_RR : cluster.SCHED_NONE
  const listening = Array.from({ length: workerCount }, async () => await whenStarted(fork()))
  let ports: number[]
  try {
    ports = await Promise.all(listening)
  } catch (err) {
    // One worker could not start: stop the others and the database rather than leave them running.
    await close()
    throw err
  }
  started = true
  const port = ports[0] ?? config.port
  const url = `http://${config.host}:${port}`
  if (config.adminPort !== undefined) {
    try {
      admin = await startAdminServer({
        host: config.adminHost,
        port: config.adminPort,
        log,
        metrics: primaryMetrics(),
        // The primary has no database pool or hash pool of its own: its details are the workers serving.
        readiness: async () => {
          if (stopping) throw createError('SHUTTING_DOWN', 'The service is draining before it shuts down')
          if (listeningWorkers.size === 0) throw createError('NOT_READY', 'no worker process is listening')
          return { workers: { listening: listeningWorkers.size, configured: workerCount } }
        },
      })
    } catch (err) {
      await close()
      throw err
    }
  }
  log.info({
    url,
    ...(admin === undefined ? {} : { adminUrl: admin.url }),
    workers: workerCount,
    strategy: harness?.strategy ?? 'tollbooth',
    ...(threadsPerWorker === undefined ? {} : { cpuBudget: split.budget, threadsPerWorker, unusedCpus: split.unusedCpus }),
  }, 'tollbooth is listening')
  return { url, adminUrl: admin?.url, workers: workerCount, threadsPerWorker, drain, close }
}
