/**
 * What the administration commands (`tollbooth keys`, `tollbooth clients`) share: a refusal with
 * its exit code, and the database they work on (DATABASE_URL, or the embedded PostgreSQL of the
 * service running from the data folder) in a pool of one, refused plainly when it cannot be reached.
 */
import path from 'node:path'
import type pg from 'pg'
import type { Config } from '../config/index.js'
import { isTollboothError } from '../errors.js'
import { createDatabasePool, isConnectionFailure, runningEmbeddedPostgresUrl } from '../db/index.js'

/** A refusal the operator can act on, with the exit code it ends with. */
export class CommandRefusal extends Error {
  constructor (message: string, readonly exitCode: 1 | 2) {
    super(message)
  }
}

/** DATABASE_URL, or the embedded PostgreSQL a service runs from the data folder now. */
function databaseUrl (config: Config): string {
  if (config.databaseUrl !== undefined) return config.databaseUrl
  const url = runningEmbeddedPostgresUrl(path.join(config.dataDir, 'pg'))
  if (url === undefined) throw new CommandRefusal(`no DATABASE_URL, and no embedded PostgreSQL is running from ${config.dataDir} (TOLLBOOTH_DATA_DIR): start the service from that folder (npm start) and run this while it runs, or set DATABASE_URL`, 1)
  return url
}

/** Runs `use` on a pool of one connection to the command's database, ended after; a database out of reach is a refusal (exit 1). */
export async function withCommandPool<T> (config: Config, use: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = createDatabasePool(databaseUrl(config), 1, { acquireTimeoutMs: 10_000, log: { warn: () => {} } })
  try {
    return await use(pool)
  } catch (err) {
    if (!isTollboothError(err, 'DATABASE_UNAVAILABLE') && !isConnectionFailure(err)) throw err
    const where = config.databaseUrl === undefined ? `the embedded PostgreSQL of ${config.dataDir} (has the service stopped?)` : 'the database at DATABASE_URL'
    throw new CommandRefusal(`cannot reach ${where}: ${(err as Error).message}`, 1)
  } finally {
    await pool.end()
  }
}
