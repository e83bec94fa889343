/**
 * Services the lab starts itself when no --target is given, through the service package's
 * launcher API (tollbooth/launcher, docs/reference/launcher.md): one embedded PostgreSQL
 * for the whole command (a scratch folder, removed after), and a `tollbooth serve` process
 * per run on it, started the way a user would start one, so the lab measures exactly what
 * ships. Its URL comes from the service's ready file, not from its logs.
 */
import { createHash, randomBytes } from 'node:crypto'
import { startDatabase, startReplicas, startServe } from 'tollbooth/launcher'

export interface LocalDatabase {
  url: string
  stop (): Promise<void>
}

/** An embedded PostgreSQL in a scratch folder, deleted on stop. */
export async function startLocalDatabase (): Promise<LocalDatabase> {
  return await startDatabase({ name: 'tollbooth_lab', label: 'lab' })
}

export interface LocalServiceOptions {
  databaseUrl: string
  /** Environment for the service (TOLLBOOTH_HASH_STRATEGY, TOLLBOOTH_BCRYPT_COST ...); PORT, HOST and the database are the lab's. */
  env: Record<string, string>
  startTimeoutMs?: number
  /** N services behind HAProxy, each under a CPU quota (the launcher's startReplicas), instead of one. */
  replicas?: { count: number, cpusPerReplica?: number | undefined } | undefined
}

export interface LocalService {
  url: string
  /** Undefined for replicas: HAProxy's URL is no one process. */
  pid: number | undefined
  /** Replicas: how they run (count, quota, each one's hash threads), and what went without. */
  replicas?: { description: string, warnings: string[] }
  /** The last lines the service logged, for error messages. */
  logTail (): string
  stop (): Promise<void>
}

/** A secret shared by the services of one lab command, so tokens stay valid across them. */
export const labJwtSecret = randomBytes(32).toString('base64url')

/**
 * Seals the signing keys of the lab's services in the lab's database. Not a secret: the lab's
 * services and tokens are throwaway; a fixed value keeps a database given with
 * --database-url usable by the next lab command. Set TOLLBOOTH_KEY_ENCRYPTION_KEY to use another.
 */
export const labKeyEncryptionKey = process.env.TOLLBOOTH_KEY_ENCRYPTION_KEY ?? createHash('sha256').update('tollbooth lab: not a secret').digest('base64')

export async function startLocalService (options: LocalServiceOptions): Promise<LocalService> {
  const inherited = { ...process.env }
  // libuv reads this once: an inherited value would change what the libuv strategies measure.
  delete inherited.UV_THREADPOOL_SIZE
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    TOLLBOOTH_LOG_LEVEL: 'info',
    ...options.env,
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: options.databaseUrl,
    TOLLBOOTH_JWT_SECRET: labJwtSecret,
    TOLLBOOTH_KEY_ENCRYPTION_KEY: labKeyEncryptionKey,
  }
  const strategy = options.env.TOLLBOOTH_HASH_STRATEGY ?? 'tollbooth'
  try {
    if (options.replicas !== undefined) {
      const { count, cpusPerReplica } = options.replicas
      const set = await startReplicas({ count, cpusPerReplica, env, databaseUrl: options.databaseUrl, ...(options.startTimeoutMs === undefined ? {} : { startTimeoutMs: options.startTimeoutMs }) })
      const quota = set.quota === 'none' ? 'no CPU quota' : `${String(set.cpusPerReplica)} CPU each (${set.quota})`
      const description = `${count} x ${quota} behind HAProxy; hash threads ${set.replicas.map((replica) => String(replica.hashThreads)).join(',')}`
      return { url: set.url, pid: undefined, replicas: { description, warnings: set.warnings }, logTail: () => set.replicas.map((replica) => replica.logTail()).join('\n'), stop: set.stop }
    }
    const service = await startServe({ env, ...(options.startTimeoutMs === undefined ? {} : { startTimeoutMs: options.startTimeoutMs }) })
    return { url: service.url, pid: service.pid, logTail: service.logTail, stop: async () => { await service.stop() } }
  } catch (err) {
    throw new Error(`the service (${strategy}): ${(err as Error).message}`, { cause: err })
  }
}
