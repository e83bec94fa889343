/**
 * Runs the service: database, migrations, password engine, app, listen, and a graceful shutdown
 * on SIGINT/SIGTERM. A start that fails on the way stops everything it had started.
 */
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type pino from 'pino'
import type pg from 'pg'
import type { Config } from '../config/index.js'
import { type EmbeddedDatabase, ThrottledFaultLog, createDatabasePool } from '../db/index.js'
import { createPasswordEngine, policyHashParams, type ExecutorFactory, type PasswordEngine } from '../hashing/index.js'
import { missingHashMallocEnv, openFilesLimit } from '../machine/index.js'
import { packageVersion } from '../paths.js'
import { addAcceptors, type Acceptors } from './acceptors.js'
import { startAdminServer, type AdminServer } from './admin.js'
import { buildApp, type AppHarness, type TollboothApp, createLogger, checkReadiness } from '../http/index.js'
import { startDatabase, type ServiceDatabase } from './database.js'
import { createError } from '../errors.js'

export interface RunningService {
  app: TollboothApp
  url: string
  /** The admin listener's URL (TOLLBOOTH_ADMIN_PORT; never in a cluster worker: the primary listens there). */
  adminUrl: string | undefined
  db: pg.Pool
  engine: PasswordEngine
  embedded: EmbeddedDatabase | undefined
  /** Stops accepting, finishes in-flight requests, then closes the pool, engine and database. */
  close (): Promise<void>
  /** Readiness off, still serving, for TOLLBOOTH_SHUTDOWN_DRAIN_MS (overload/drain.ts); resolves when it is over. */
  drain (): Promise<void>
}

/** The embedded-mode JWT key: generated once, kept (0600) in the data folder. */
function persistedJwtSecret (dataDir: string): string {
  const file = path.join(dataDir, 'jwt-secret')
  try {
    const secret = fs.readFileSync(file, 'utf8').trim()
    if (secret.length >= 32) return secret
  } catch {}
  const secret = randomBytes(48).toString('base64url')
  fs.mkdirSync(dataDir, { recursive: true })
  fs.writeFileSync(file, secret + '\n', { mode: 0o600 })
  return secret
}

/**
 * The HS256 secret: the configured one, or on the embedded database one generated once into the
 * data folder. With DATABASE_URL nothing is written there: the image runs read-only.
 */
export function jwtSecretOf (config: Pick<Config, 'jwtSecret' | 'jwtAlgorithm' | 'databaseUrl' | 'dataDir'>): string | undefined {
  return config.jwtSecret ?? (config.jwtAlgorithm === 'HS256' && config.databaseUrl === undefined ? persistedJwtSecret(config.dataDir) : undefined)
}

/** Descriptors the process needs besides client connections: its database pool, threads' pipes, logs, the listener (a margin). */
const reservedFileDescriptors = 256

export interface ConnectionLimitCheck {
  /** Soft limit on open files (Node raises it to the hard limit at start), or undefined when unknown. */
  openFiles: number | undefined
  /** net.core.somaxconn, the kernel's cap on the listen backlog, or undefined when unknown. */
  somaxconn: number | undefined
  warnings: string[]
}

function readOrUndefined (file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
}

/**
 * What the kernel allows against what the settings plan for: a descriptor per connection plus
 * the process's own, and a listen backlog that somaxconn silently caps. Short of either,
 * connections fail under a crowd (EMFILE, or SYNs dropped).
 */
export function checkConnectionLimits (config: Pick<Config, 'maxConnections' | 'listenBacklog' | 'databasePoolSize'>, read: (file: string) => string | undefined = readOrUndefined): ConnectionLimitCheck {
  const limits = read('/proc/self/limits')
  const openFiles = limits === undefined ? undefined : openFilesLimit(limits)
  const somaxconnText = read('/proc/sys/net/core/somaxconn')
  const somaxconn = somaxconnText === undefined ? undefined : Number(somaxconnText.trim())
  const warnings: string[] = []
  if (config.maxConnections > 0 && openFiles !== undefined) {
    const needed = config.maxConnections + config.databasePoolSize + reservedFileDescriptors
    if (openFiles < needed) {
      warnings.push(`the open-files limit (RLIMIT_NOFILE) is ${openFiles}, below the ${needed} that TOLLBOOTH_MAX_CONNECTIONS=${config.maxConnections} needs (one per connection, plus ${config.databasePoolSize + reservedFileDescriptors} for the database pool and the process): raise it (ulimit -n, systemd LimitNOFILE=, docker --ulimit nofile=) or lower TOLLBOOTH_MAX_CONNECTIONS`)
    }
  }
  if (somaxconn !== undefined && Number.isFinite(somaxconn) && somaxconn < config.listenBacklog) {
    warnings.push(`the listen backlog is capped at ${somaxconn} by net.core.somaxconn, below TOLLBOOTH_LISTEN_BACKLOG=${config.listenBacklog}: a burst of new connections past it is dropped (raise it with sysctl -w net.core.somaxconn=${config.listenBacklog})`)
  }
  return { openFiles, somaxconn, warnings }
}

/**
 * What the lab's harness (harness/) changes of the service it starts: a seed article's hash
 * strategy in place of tollbooth's pool, and its diagnostic routes. `tollbooth serve` passes
 * none, and never loads the harness.
 */
export interface ServiceHarness extends AppHarness {
  /** The executor hashes run on, in place of tollbooth's pool. */
  createExecutor?: ExecutorFactory
  /** One process per CPU, connections handed out round robin, each with its own pool: the Piscina article's cluster. */
  processPerCpu?: boolean
  /** Refuses (CONFIG_INVALID) a configuration the harness must not run under. */
  checkConfig?: (config: Config) => void
}

export interface StartServiceOptions {
  logger?: pino.Logger
  listeningMessage?: string
  /** One of the worker processes of `--workers` (cluster.ts). */
  clusterWorker?: boolean
  harness?: ServiceHarness
}

export async function startService (config: Config, options: StartServiceOptions = {}): Promise<RunningService> {
  const log = options.logger ?? createLogger(config.logLevel)
  const { harness } = options
  let database: ServiceDatabase | undefined
  let db: pg.Pool | undefined
  let engine: PasswordEngine | undefined
  let app: TollboothApp | undefined
  let admin: AdminServer | undefined
  let acceptors: Acceptors | undefined
  // Everything started so far, in reverse order; a part that fails to stop is logged and the rest still stop.
  const stop = async (): Promise<void> => {
    const parts: Array<[string, (() => Promise<void>) | undefined]> = [
      ['the admin listener', admin?.close],
      ['the extra acceptors', acceptors?.close],
      ['the app', app === undefined ? undefined : async () => { await app?.close() }],
      ['the password engine', engine?.close.bind(engine)],
      ['the database pool', db?.end.bind(db)],
      ['the embedded PostgreSQL', database?.stop],
    ]
    for (const [part, close] of parts) {
      await close?.().catch((err: unknown) => { log.error({ err }, `${part} did not stop cleanly`) })
    }
  }

  try {
    // A cluster worker's primary has started and migrated the database already.
    database = options.clusterWorker === true
      ? { url: config.databaseUrl ?? '', embedded: undefined, stop: async () => {} }
      : await startDatabase(config, log)
    db = createDatabasePool(database.url, config.databasePoolSize, {
      acquireTimeoutMs: config.databaseAcquireTimeoutMs,
      preparedStatements: config.databaseStatements === 'named',
      log: log.child({ component: 'database' }),
    })
    engine = await createPasswordEngine({
      policy: config.hashPolicy,
      ...(config.hashThreads === undefined ? {} : { threads: config.hashThreads }),
      ...(config.hashMaxQueue === undefined ? {} : { maxQueue: config.hashMaxQueue }),
      memoryBudgetBytes: config.hashMemoryBudgetBytes,
      threadNice: config.hashThreadNice,
      log: new ThrottledFaultLog(log.child({ component: 'hashing' })),
    }, harness?.createExecutor)
    const stats = engine.stats()
    log.info({
      strategy: engine.strategy,
      threads: stats.threads,
      cpuBudget: engine.cpuBudget,
      algorithm: config.hashPolicy.algorithm,
      params: policyHashParams(config.hashPolicy).params,
      memory: engine.memory,
      ...(config.hashCalibrationFile === undefined ? {} : { calibration: config.hashCalibrationFile }),
      meanHashMs: Math.round(stats.meanRunMs * 10) / 10,
    }, `hash pool: ${stats.threads} thread(s) from the CPU budget (${engine.cpuBudget.source}${config.hashThreads === undefined ? '' : ', overridden by config'})`)

    const jwtSecret = jwtSecretOf(config)
    app = await buildApp({ config, db, engine, jwtSecret, logger: log, clusterWorker: options.clusterWorker === true, soleProcessOnDatabase: database.embedded !== undefined, ...(harness === undefined ? {} : { harness }) })
    const limits = checkConnectionLimits(config)
    for (const warning of limits.warnings) log.warn({ openFiles: limits.openFiles, somaxconn: limits.somaxconn }, warning)
    // Past it, Node closes a new connection at once, rather than run out of descriptors (the pool needs some too).
    if (config.maxConnections > 0) app.server.maxConnections = config.maxConnections
    const url = await app.listen({ host: config.host, port: config.port, backlog: config.listenBacklog })
    // A `--workers` worker holds the socket itself (cluster.ts sets SCHED_NONE) and accepts through
    // its own copies; with round robin the primary accepts every connection and hands it over.
    if (options.clusterWorker !== true || harness?.processPerCpu !== true) {
      acceptors = await addAcceptors(app.server, config.acceptors, {
        maxConnections: config.maxConnections,
        backlog: config.listenBacklog,
        onWarning: (message) => { log.warn(message) },
      })
    }
    const running = app
    if (config.adminPort !== undefined && options.clusterWorker !== true) {
      const readyDb = db
      const readyEngine = engine
      admin = await startAdminServer({
        host: config.adminHost,
        port: config.adminPort,
        log,
        metrics: running.metrics,
        readiness: async (requestLog) => {
          if (running.drain.draining) throw createError('SHUTTING_DOWN', 'The service is draining before it shuts down')
          return { ...await checkReadiness(readyDb, readyEngine, 2000, requestLog) }
        },
      })
    }
    log.info({ url, ...(admin === undefined ? {} : { adminUrl: admin.url }), version: packageVersion, strategy: engine.strategy }, options.listeningMessage ?? 'tollbooth is listening')
    // Only where glibc takes them (2.35 and later): see machine/malloc-env.ts.
    const mallocMissing = missingHashMallocEnv(process.env)
    if (Object.keys(mallocMissing).length > 0) {
      const why = config.mallocSettings === 'off' ? 'TOLLBOOTH_MALLOC_SETTINGS=off leaves them unset' : 'start through the `tollbooth` command, which adds them, or set them before node starts'
      log.info({ missing: mallocMissing }, `glibc malloc maps a large scrypt buffer afresh for every hash without these variables, which make scrypt hashes at N * r of 2^18 and more cheaper: ${why}`)
    }
    return {
      app,
      url,
      adminUrl: admin?.url,
      db,
      engine,
      embedded: database.embedded,
      close: stop,
      async drain () {
        await running.drain.run(config.shutdownDrainMs)
      },
    }
  } catch (err) {
    await stop()
    throw err
  }
}

/**
 * SIGINT/SIGTERM: the first shuts down cleanly, a second exits at once. SIGTERM (an orchestrator's)
 * drains first; SIGINT (Ctrl-C) does not make a person wait. shutdownTimeoutMs counts after the drain.
 */
export function handleSignals (started: Promise<{ close (): Promise<void>, drain?: () => Promise<void> }>, log: pino.Logger, shutdownTimeoutMs = 15_000): void {
  let stopping = false
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now')
      process.exit(1)
    }
    stopping = true
    log.info({ signal }, 'shutting down')
    // A signal that arrives while the service starts waits for it, so its database and hash
    // threads are closed, not left behind by the default action of the signal.
    started.then(async (service) => {
      if (signal === 'SIGTERM' && service.drain !== undefined) await service.drain()
      const force = setTimeout(() => {
        log.error('shutdown took too long: exiting')
        process.exit(1)
      }, shutdownTimeoutMs)
      force.unref()
      await service.close()
    }).then(() => {
      log.info('stopped')
      process.exit(0)
    }, (err: unknown) => {
      log.error({ err }, 'shutdown failed')
      process.exit(1)
    })
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
}
