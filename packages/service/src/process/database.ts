/**
 * The one database bootstrap of `tollbooth serve` (one process, or the cluster primary):
 * PostgreSQL (the embedded one in the data folder unless DATABASE_URL is set), migrated.
 * Embedded: migrated as the migration role, served as the runtime role it grants. DATABASE_URL:
 * migrated only when a migration is pending and its role may apply it (db/migrate.ts
 * `migrateAtStart`). A failure on the way stops what it started.
 */
import path from 'node:path'
import type pino from 'pino'
import type { Config } from '../config/index.js'
import { startEmbeddedPostgres, type EmbeddedDatabase, migrate, migrateAtStart, grantRuntimeRole, serviceRoleName, createDatabasePool } from '../db/index.js'

export interface ServiceDatabase {
  url: string
  /** Set when the embedded PostgreSQL runs (DATABASE_URL unset). */
  embedded: EmbeddedDatabase | undefined
  /** Stops the embedded PostgreSQL; nothing for an external one. */
  stop (): Promise<void>
}

export async function startDatabase (config: Pick<Config, 'databaseUrl' | 'dataDir'>, log: pino.Logger): Promise<ServiceDatabase> {
  let embedded: EmbeddedDatabase | undefined
  let url = config.databaseUrl
  if (url === undefined) {
    const pgLog = log.child({ component: 'postgres' })
    embedded = await startEmbeddedPostgres({
      clusterDir: path.join(config.dataDir, 'pg'),
      // The service connects as a role that reads and writes rows and nothing more, never as the superuser.
      serviceRole: true,
      log: (message) => { pgLog.debug(message) },
      notice: (message) => { pgLog.info(message) },
    })
    url = embedded.url
    log.info({ dataDir: config.dataDir, port: embedded.port }, 'embedded PostgreSQL started')
  }
  const stop = async (): Promise<void> => { await embedded?.stop() }
  try {
    const pool = createDatabasePool(embedded?.migrationUrl ?? url, 2, { log: log.child({ component: 'database' }) })
    try {
      const applied = embedded === undefined ? await migrateAtStart(pool) : await migrate(pool)
      if (embedded !== undefined) await grantRuntimeRole(pool, serviceRoleName)
      if (applied.length > 0) log.info({ applied }, 'migrations applied')
    } finally {
      await pool.end()
    }
  } catch (err) {
    await stop().catch((stopError: unknown) => { log.error({ err: stopError }, 'the embedded PostgreSQL did not stop') })
    throw err
  }
  return { url, embedded, stop }
}
