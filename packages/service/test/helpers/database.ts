import { createHash, randomBytes } from 'node:crypto'
import pg from 'pg'
import { migrate, readMigrations } from '../../src/db/migrate.js'
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

function databaseUrl (name: string): string {
  const url = new URL(adminDatabaseUrl())
  url.pathname = `/${name}`
  return url.toString()
}

/** Any value: the advisory lock under which one test process makes the migrated template and the others wait. */
const templateLockKey = 7_321_004

/**
 * A database with every migration applied, to copy from: migrating each test's database anew
 * cost about 150 ms and 0.2 s of PostgreSQL's CPU, a hundred times a run. Named by the
 * migrations' checksums, so a server kept between runs (DATABASE_URL) never hands out a
 * template of older migrations; older templates are dropped when a new one is made. The
 * first test process to need it makes it, under an advisory lock; no one stays connected to
 * it (PostgreSQL copies only a template nobody is connected to).
 */
async function migratedTemplate (admin: pg.Client): Promise<string> {
  const checksums = readMigrations().map((migration) => migration.checksum).join(',')
  const name = `tb_template_${createHash('sha256').update(checksums).digest('hex').slice(0, 16)}`
  await admin.query('SELECT pg_advisory_lock($1)', [templateLockKey])
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    if (rowCount === 0) {
      const { rows } = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'tb\\_template\\_%'")
      for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`)
      await admin.query(`CREATE DATABASE ${name}_new`)
      const pool = createDatabasePool(databaseUrl(`${name}_new`), 1)
      try {
        await migrate(pool)
      } finally {
        await pool.end()
      }
      // Renamed only once complete: a process that died half-way leaves no template to copy.
      await admin.query(`ALTER DATABASE ${name}_new RENAME TO ${name}`)
    }
  } finally {
    await admin.query('SELECT pg_advisory_unlock($1)', [templateLockKey])
  }
  return name
}

/** The migrated template's name once this process has found or made it: the files are read and hashed once. */
let knownTemplate: string | undefined

/** A fresh database on the test server: a copy of the migrated template, or empty with `migrate: false`. */
export async function createTestDatabase (options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const admin = new pg.Client({ connectionString: adminDatabaseUrl() })
  const name = `tb_test_${randomBytes(6).toString('hex')}`
  await admin.connect()
  try {
    const template = options.migrate === false ? 'template1' : (knownTemplate ??= await migratedTemplate(admin))
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`)
  } finally {
    await admin.end()
  }
  const url = databaseUrl(name)
  const pool = createDatabasePool(url, 10)
  let dropped = false
  return {
    url,
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

export interface QueryHold {
  /** Resolves when `count` queries are held. */
  held: Promise<void>
  /** Queries held now. */
  waiting: () => number
  /** The SQL text of every `pool.query` call since the hold started. */
  texts: string[]
  /** Lets the held queries run, and the next ones pass. */
  release: () => void
}

/** Holds every `pool.query` whose text matches `pattern` at the database until released: requests kept in flight on purpose. */
export function holdQueries (pool: pg.Pool, pattern: RegExp, count: number): QueryHold {
  const original = pool.query
  const texts: string[] = []
  let waiting = 0
  let release!: () => void
  const gate = new Promise<void>((resolve) => { release = resolve })
  let reached!: () => void
  const held = new Promise<void>((resolve) => { reached = resolve })
  pool.query = async function (this: pg.Pool, ...args: unknown[]): Promise<unknown> {
    const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: unknown } | undefined)?.text)
    texts.push(text)
    if (pattern.test(text)) {
      waiting++
      if (waiting === count) reached()
      await gate
      waiting--
    }
    return await (original as (...a: unknown[]) => Promise<unknown>).apply(this, args)
  } as unknown as typeof pool.query
  return {
    held,
    waiting: () => waiting,
    texts,
    release () {
      release()
      pool.query = original
    },
  }
}
