/**
 * Services the lab starts itself when no --target is given, through the service package's
 * launcher API (docs/reference/launcher.md): a `tollbooth serve` process per run, started the
 * way a user would start one, so the lab measures exactly what ships; or, for a seed's hash
 * strategy or the diagnostic routes, the launcher's research harness.
 */
import { createHash, randomBytes } from 'node:crypto'
import { startReplicas, startServe, type HarnessOptions } from 'tollbooth/launcher'

/** A secret shared by the services of one lab command, so tokens stay valid across them. */
const labJwtSecret = randomBytes(32).toString('base64url')

/**
 * Seals the signing keys of the lab's services in the lab's database. Not a secret: the lab's
 * services and tokens are throwaway; a fixed value keeps a database given with
 * --database-url usable by the next lab command. Set TOLLBOOTH_KEY_ENCRYPTION_KEY to use another.
 */
const labKeyEncryptionKey = process.env.TOLLBOOTH_KEY_ENCRYPTION_KEY ?? createHash('sha256').update('tollbooth lab: not a secret').digest('base64')

/**
 * The settings an administration command (`tollbooth clients`) needs to work on the database of
 * the lab's services, or of a target given with --database-url: that database, and what its
 * configuration is checked for as the service's is (a public URL, the key that seals the keys).
 */
export function adminCommandEnv (databaseUrl: string): Record<string, string> {
  return { TOLLBOOTH_PUBLIC_URL: labPublicUrl, DATABASE_URL: databaseUrl, TOLLBOOTH_KEY_ENCRYPTION_KEY: labKeyEncryptionKey }
}

/** The lab's services' public URL unless the service env says another: no mail is read, no page visited from it. */
const labPublicUrl = 'http://127.0.0.1'

/** N services behind HAProxy, each under a CPU quota (the launcher's startReplicas), instead of one. */
export interface ReplicaOptions { count: number, cpusPerReplica?: number | undefined }

export interface LocalService {
  url: string
  /** Where its /metrics is: `url`, or its admin listener when the service env sets TOLLBOOTH_ADMIN_PORT. */
  metricsUrl: string
  /** Undefined for replicas: HAProxy's URL is no one process. */
  pid: number | undefined
  /** Replicas: how they run (count, quota, each one's hash threads), and what went without. */
  replicas?: { description: string, warnings: string[] }
  stop (): Promise<void>
}

/**
 * `env`: the service's settings (TOLLBOOTH_HASH_ALGORITHM ...); HOST, PORT, the database and the
 * keys are the lab's. `harness`: the launcher's research choices (a seed's hash strategy, the
 * diagnostic routes), which are not settings of the service as it ships; unset: what ships.
 */
export async function startLocalService (options: { databaseUrl: string, env: Record<string, string>, harness?: HarnessOptions | undefined, replicas?: ReplicaOptions | undefined }): Promise<LocalService> {
  const inherited = { ...process.env }
  // libuv reads this once: an inherited value would change what the libuv strategies measure.
  delete inherited.UV_THREADPOOL_SIZE
  // The lab sets these secrets itself; an inherited _FILE beside them would be refused as "both".
  for (const name of ['DATABASE_URL_FILE', 'TOLLBOOTH_JWT_SECRET_FILE', 'TOLLBOOTH_KEY_ENCRYPTION_KEY_FILE']) delete inherited[name]
  // No drain on stop: the lab stops a service after its load has ended, and no load balancer
  // needs time to take it out of rotation (the default drain cost 5 s per service stopped).
  const env = {
    ...inherited, TOLLBOOTH_LOG_LEVEL: 'info', TOLLBOOTH_SHUTDOWN_DRAIN_MS: '0', TOLLBOOTH_PUBLIC_URL: labPublicUrl, ...options.env, HOST: '127.0.0.1', PORT: '0', DATABASE_URL: options.databaseUrl, TOLLBOOTH_JWT_SECRET: labJwtSecret, TOLLBOOTH_KEY_ENCRYPTION_KEY: labKeyEncryptionKey,
  }
  try {
    if (options.replicas !== undefined) {
      const { count, cpusPerReplica } = options.replicas
      const set = await startReplicas({ count, cpusPerReplica, env, databaseUrl: options.databaseUrl, ...(options.harness === undefined ? {} : { harness: options.harness }) })
      const quota = set.quota === 'none' ? 'no CPU quota' : `${String(set.cpusPerReplica)} CPU each (${set.quota})`
      const description = `${count} x ${quota} behind HAProxy; hash threads ${set.replicas.map((replica) => String(replica.hashThreads)).join(',')}`
      return { url: set.url, metricsUrl: set.metricsUrl, pid: undefined, replicas: { description, warnings: set.warnings }, stop: set.stop }
    }
    const service = await startServe({ env, ...(options.harness === undefined ? {} : { harness: options.harness }) })
    return { url: service.url, metricsUrl: service.metricsUrl, pid: service.pid, stop: async () => { await service.stop() } }
  } catch (err) {
    throw new Error(`the service (${options.harness?.strategy ?? 'tollbooth'}): ${(err as Error).message}`, { cause: err })
  }
}
