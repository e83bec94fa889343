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
import path from 'node:path'
import type pino from 'pino'
import type { Config } from '../config.js'
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded.js'
import { migrate } from '../db/migrate.js'
import { createDatabasePool } from '../db/pool.js'
import { detectCpuBudget } from '../hashing/index.js'
import { serveClusterMetrics } from './cluster-metrics.js'
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
  let embedded: EmbeddedDatabase | undefined
  let databaseUrl = config.databaseUrl
  if (databaseUrl === undefined) {
    embedded = await startEmbeddedPostgres({ clusterDir: path.join(config.dataDir, 'pg'), log: (m) => { log.debug({ component: 'postgres' }, m) } })
    databaseUrl = embedded.url
    log.info({ dataDir: config.dataDir, port: embedded.port }, 'embedded PostgreSQL started')
  }
  const db = createDatabasePool(databaseUrl, 2)
  try {
    await migrate(db)
  } finally {
    await db.end()
  }
  // loadConfig refuses DATABASE_URL without TOLLBOOTH_JWT_SECRET: a missing key is the embedded mode's.
  const jwtSecret = config.jwtSecret ?? persistedJwtSecret(config.dataDir)
  const workerCount = config.hashThreads ?? detectCpuBudget().cpus
  // hashThreads counts the workers here; inside each, the Piscina pool keeps its default size.
  const workerConfig: Config = { ...config, databaseUrl, jwtSecret, hashThreads: undefined }
  const stopServingMetrics = serveClusterMetrics()

  const workers: Worker[] = []
  const listening = Array.from({ length: workerCount }, () => {
    const worker = cluster.fork({ [workerConfigEnv]: JSON.stringify(workerConfig) })
    workers.push(worker)
    return new Promise<{ address: string, port: number }>((resolve, reject) => {
      worker.once('listening', resolve)
      worker.once('exit', (code) => { reject(new Error(`cluster worker exited with code ${code} before listening`)) })
    })
  })
  let stopping = false
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) log.error({ worker: worker.id, code, signal }, 'cluster worker died')
  })
  const addresses = await Promise.all(listening)
  const port = addresses[0]?.port ?? config.port
  const url = `http://${config.host}:${port}`
  log.info({ url, workers: workerCount, strategy: 'cluster' }, 'tollbooth is listening')

  return {
    url,
    workers: workerCount,
    async close () {
      stopping = true
      stopServingMetrics()
      await Promise.all(workers.map(async (worker) => {
        if (worker.isDead()) return
        const exited = new Promise((resolve) => worker.once('exit', resolve))
        worker.process.kill('SIGTERM')
        await exited
      }))
      await embedded?.stop()
    },
  }
}
