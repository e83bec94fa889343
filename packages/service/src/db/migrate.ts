/**
 * A tiny migration runner: plain versioned SQL files (`NNN_name.sql`) applied in
 * order, each in the one transaction that holds an advisory lock, so two
 * instances starting at once apply each migration exactly once. A file edited
 * after it was applied is refused (its checksum changed). Least privilege: the
 * migration role owns the schema; the runtime role it grants (`grantRuntimeRole`)
 * reads and writes rows and can change no table.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type pg from 'pg'
import { packageRoot } from '../paths.js'
import { createError } from '../errors.js'
import { withTransaction } from './pool.js'

const migrationsDir = path.join(packageRoot, 'src', 'db', 'migrations')

/** Arbitrary constant: the advisory lock key shared by every tollbooth instance. */
const migrationLockKey = 7_351_024_117

export interface Migration {
  version: number
  name: string
  sql: string
  checksum: string
}

export function readMigrations (dir = migrationsDir): Migration[] {
  return fs.readdirSync(dir)
    .filter((file) => /^\d+_[\w-]+\.sql$/.test(file))
    .sort()
    .map((file) => {
      const sql = fs.readFileSync(path.join(dir, file), 'utf8')
      return {
        version: Number.parseInt(file, 10),
        name: file.replace(/\.sql$/, ''),
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
      }
    })
}

/** Applies pending migrations; returns the names applied by this call. */
export async function migrate (pool: pg.Pool, migrations = readMigrations()): Promise<string[]> {
  return await withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [migrationLockKey])
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      checksum   text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`)
    const { rows } = await client.query<{ version: number, checksum: string }>('SELECT version, checksum FROM schema_migrations')
    const done = new Map(rows.map((row) => [row.version, row.checksum]))
    const applied: string[] = []
    for (const migration of migrations) {
      const checksum = done.get(migration.version)
      if (checksum !== undefined) {
        if (checksum !== migration.checksum) throw new Error(`migration ${migration.name} was edited after it was applied`)
        continue
      }
      await client.query(migration.sql)
      await client.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [migration.version, migration.name, migration.checksum])
      applied.push(migration.name)
    }
    return applied
  })
}

/** The migrations not yet applied to the database `pool` connects to (every one before the first). */
async function pendingMigrations (pool: pg.Pool, migrations = readMigrations()): Promise<Migration[]> {
  let applied: Set<number>
  try {
    const { rows } = await pool.query<{ version: number }>('SELECT version FROM schema_migrations')
    applied = new Set(rows.map((row) => row.version))
  } catch (err) {
    if ((err as { code?: string }).code !== '42P01') throw err
    applied = new Set()
  }
  return migrations.filter((migration) => !applied.has(migration.version))
}

/**
 * What `serve` does at start: nothing when the schema is current (the runtime role may not run
 * DDL, and need not); the pending migrations when its role may apply them (one role for both, as
 * in development); otherwise a refusal that says to run `tollbooth migrate` as the migration role.
 */
export async function migrateAtStart (pool: pg.Pool, migrations = readMigrations()): Promise<string[]> {
  const pending = await pendingMigrations(pool, migrations)
  if (pending.length === 0) return []
  try {
    return await migrate(pool, migrations)
  } catch (err) {
    if ((err as { code?: string }).code !== '42501') throw err
    throw createError('CONFIG_INVALID', `${pending.length} migration(s) pending (${pending.map((migration) => migration.name).join(', ')}) and this database role may not apply them: run \`tollbooth migrate\` as the migration role first (docs/how-to/deploy.md)`)
  }
}

/**
 * Gives `role` what the service needs at run time and nothing more: rows of every table
 * (read, insert, update, delete), the sequences behind them, and schema_migrations read-only,
 * so it can tell whether the schema is current. No ownership and no CREATE on the schema: it
 * cannot create, alter or drop a table. Run by the migration role after each migration, so the
 * tables a migration adds are granted too.
 */
export async function grantRuntimeRole (pool: pg.Pool, role: string): Promise<void> {
  await withTransaction(pool, async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])
    if (rowCount === 0) throw createError('CONFIG_INVALID', `The runtime role ${JSON.stringify(role)} does not exist: create it (LOGIN, no other attribute) before \`tollbooth migrate\``)
    const { rows } = await client.query<{ owner: boolean, superuser: boolean }>(
      `SELECT pg_has_role($1, n.nspowner, 'MEMBER') AS owner, r.rolsuper AS superuser
         FROM pg_namespace n, pg_roles r WHERE n.nspname = 'public' AND r.rolname = $1`, [role])
    if (rows[0]?.owner === true || rows[0]?.superuser === true) {
      throw createError('CONFIG_INVALID', `The runtime role ${JSON.stringify(role)} owns the schema or is a superuser: it could run DDL; use a role of its own`)
    }
    // Utility statements take no parameters: the name is quoted as an identifier.
    const quoted = client.escapeIdentifier(role)
    await client.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC, ${quoted}`)
    await client.query(`GRANT USAGE ON SCHEMA public TO ${quoted}`)
    await client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${quoted}`)
    await client.query(`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ${quoted}`)
    await client.query(`REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON schema_migrations FROM ${quoted}`)
  })
}
