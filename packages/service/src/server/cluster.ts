/**
 * The `cluster` strategy, as the Piscina article's final setup: the primary owns
 * the database (embedded or DATABASE_URL) and the migrations, then forks one
 * worker process per CPU; each worker serves HTTP on the shared port with a
 * plain Piscina pool of default options. It exists for the load lab's
 * comparison; tollbooth's own strategy is one process with a CPU-budgeted pool.
 * /metrics, answered by whichever worker gets the scrape, aggregates all workers
 * through the primary (cluster-metrics.ts).
 */
import cluster, { type Worker } from 'node:cluster'
import { randomBytes } from 'node:crypto'
import type pino from 'pino'
import type { Config } from '../config.js'
import { detectCpuBudget } from '../hashing/index.js'
import { serveClusterMetrics } from './cluster-metrics.js'
import { startDatabase } from './database.js'
import { persistedJwtSecret, startService, type RunningService } from './start.js'

const workerConfigEnv = 'TOLLBOOTH_CLUSTER_WORKER_CONFIG'

export function isClusterWorker (): boolean {
  return cluster.isWorker && process.env[workerConfigEnv] !== undefined
}

/** In a worker: the config the primary resolved (database URL, key, strategy). */
export function clusterWorkerConfig (): Config {
  return JSON.parse(process.env[workerConfigEnv] ?? '{}') as Config
}

export async function startClusterWorker (log: pino.Logger): Promise<RunningService> {
  const service = await startService(clusterWorkerConfig(), { logger: log.child({ worker: cluster.worker?.id }), listeningMessage: 'cluster worker listening', clusterWorker: true })
  const stop = (): void => { void service.close().finally(() => process.exit(0)) }
  process.on('SIGTERM', stop)
  process.on('SIGINT', () => {}) // the primary decides; Ctrl-C reaches the whole group
  process.on('disconnect', stop)
  return service
}

export interface RunningCluster {
  url: string
  workers: number
  close (): Promise<void>
}

export async function startClusterPrimary (config: Config, log: pino.Logger): Promise<RunningCluster> {
  const database = await startDatabase(config, log)
  // HS256 needs one secret for every worker; with EdDSA the keys live in PostgreSQL and this one signs nothing.
  const jwtSecret = config.jwtSecret ?? (config.databaseUrl === undefined ? persistedJwtSecret(config.dataDir) : randomBytes(48).toString('base64url'))
  const workerCount = config.hashThreads ?? detectCpuBudget().cpus
  // hashThreads counts the workers here; inside each, the Piscina pool keeps its default size.
  const workerConfig: Config = { ...config, databaseUrl: database.url, jwtSecret, hashThreads: undefined }
  const stopServingMetrics = serveClusterMetrics()

  let stopping = false
  const workers: Worker[] = []
  const onExit = (worker: Worker, code: number, signal: string): void => {
    if (!stopping) log.error({ worker: worker.id, code, signal }, 'cluster worker died')
  }
  cluster.on('exit', onExit)
  const close = async (): Promise<void> => {
    stopping = true
    stopServingMetrics()
    await Promise.all(workers.map(async (worker) => {
      if (worker.isDead()) return
      const exited = new Promise((resolve) => worker.once('exit', resolve))
      worker.process.kill('SIGTERM')
      await exited
    }))
    cluster.off('exit', onExit)
    await database.stop()
  }

  const listening = Array.from({ length: workerCount }, () => {
    const worker = cluster.fork({ [workerConfigEnv]: JSON.stringify(workerConfig) })
    workers.push(worker)
    return new Promise<{ address: string, port: number }>((resolve, reject) => {
      worker.once('listening', resolve)
      worker.once('exit', (code) => { reject(new Error(`cluster worker exited with code ${code} before listening`)) })
    })
  })
  let addresses: Array<{ address: string, port: number }>
  try {
    addresses = await Promise.all(listening)
  } catch (err) {
    // One worker could not start: stop the others and the database rather than leave them running.
    await close()
    throw err
  }
  const port = addresses[0]?.port ?? config.port
  const url = `http://${config.host}:${port}`
  log.info({ url, workers: workerCount, strategy: 'cluster' }, 'tollbooth is listening')
  return { url, workers: workerCount, close }
}
