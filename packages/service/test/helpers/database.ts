import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { migrate } from '../../src/db/migrate.js'
import { createDatabasePool } from '../../src/db/pool.js'

export interface TestDatabase {
  url: string
  pool: pg.Pool
  drop (): Promise<void>
}

export function adminDatabaseUrl (): string {
  const url = process.env.TOLLBOOTH_TEST_ADMIN_DATABASE_URL ?? process.env.DATABASE_URL
  if (url === undefined || url === '') throw new Error('run the tests with `npm test` (it starts PostgreSQL), or set DATABASE_URL')
  return url
}

/** A fresh, empty database on the test server; migrated unless told otherwise. */
export async function createTestDatabase (options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const admin = new pg.Client({ connectionString: adminDatabaseUrl() })
  const name = `tb_test_${randomBytes(6).toString('hex')}`
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(adminDatabaseUrl())
  url.pathname = `/${name}`
  const pool = createDatabasePool(url.toString(), 10)
  if (options.migrate !== false) await migrate(pool)
  let dropped = false
  return {
    url: url.toString(),
    pool,
    async drop () {
      if (dropped) return
      dropped = true
      await pool.end()
      const cleanup = new pg.Client({ connectionString: adminDatabaseUrl() })
      await cleanup.connect()
      try {
        await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await cleanup.end()
      }
    },
  }
}

export interface QueryWatch {
  /** The SQL text of every `pool.query` call since the watch started (transactions use clients and do not show). */
  texts: string[]
  stop (): void
}

/**
 * Records the pool's `query` calls, and can hold each back (a slow database) before it runs.
 * The app shares this pool object, so what the service asks of PostgreSQL shows here.
 */
export function watchQueries (pool: pg.Pool, options: { delayMs?: (text: string) => number } = {}): QueryWatch {
  const original = pool.query
  const texts: string[] = []
  const wrapped = async function (this: pg.Pool, ...args: unknown[]): Promise<unknown> {
    const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: unknown } | undefined)?.text)
    texts.push(text)
    const delayMs = options.delayMs?.(text) ?? 0
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
    return await (original as (...a: unknown[]) => Promise<unknown>).apply(this, args)
  }
  pool.query = wrapped as unknown as typeof pool.query
  return { texts, stop () { pool.query = original } }
}
