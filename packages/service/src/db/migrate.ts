/**
 * A tiny migration runner: plain versioned SQL files (`NNN_name.sql`) applied in
 * order, each in the one transaction that holds an advisory lock, so two
 * instances starting at once apply each migration exactly once. A file edited
 * after it was applied is refused (its checksum changed).
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type pg from 'pg'
import { packageRoot } from '../paths.js'
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
