/**
 * Services the lab starts itself when no --target is given, through the service package's
 * launcher API (docs/reference/launcher.md): one embedded PostgreSQL for the whole command,
 * and a `tollbooth serve` process per run on it, started the way a user would start one, so
 * the lab measures exactly what ships.
 */
import { randomBytes } from 'node:crypto'
import { startDatabase, startServe, type LaunchedDatabase, type ServeProcess } from 'tollbooth/launcher'

/** An embedded PostgreSQL in a scratch folder, deleted on stop. */
export async function startLocalDatabase (): Promise<LaunchedDatabase> {
  return await startDatabase({ name: 'tollbooth_lab', label: 'lab' })
}

/** A secret shared by the services of one lab command, so tokens stay valid across them. */
const labJwtSecret = randomBytes(32).toString('base64url')

/** `env`: the service's settings (TOLLBOOTH_HASH_STRATEGY ...); HOST, PORT, the database and the secret are the lab's. */
export async function startLocalService (options: { databaseUrl: string, env: Record<string, string> }): Promise<ServeProcess> {
  const inherited = { ...process.env }
  // libuv reads this once: an inherited value would change what the libuv strategies measure.
  delete inherited.UV_THREADPOOL_SIZE
  const env = { ...inherited, TOLLBOOTH_LOG_LEVEL: 'info', ...options.env, HOST: '127.0.0.1', PORT: '0', DATABASE_URL: options.databaseUrl, TOLLBOOTH_JWT_SECRET: labJwtSecret }
  try {
    return await startServe({ env })
  } catch (err) {
    throw new Error(`the service (${options.env.TOLLBOOTH_HASH_STRATEGY ?? 'tollbooth'}): ${(err as Error).message}`, { cause: err })
  }
}
