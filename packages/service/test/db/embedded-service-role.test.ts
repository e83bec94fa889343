import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import pg from 'pg'
import { startEmbeddedPostgres } from '../../src/db/embedded/embedded.js'
import { migrationRoleName, serviceRoleName } from '../../src/db/embedded/role.js'
import { grantRuntimeRole, migrate } from '../../src/db/migrate.js'
import { createDatabasePool } from '../../src/db/pool.js'
import { startDatabase } from '../../src/process/database.js'
import { createLogger } from '../../src/http/logger.js'

/** The service's pool: its end() waits for the connections to close, so the server can be stopped right after. */
async function withPool<T> (url: string, work: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = createDatabasePool(url, 2)
  try {
    return await work(pool)
  } finally {
    await pool.end()
  }
}

interface RoleFacts { user: string, rolsuper: boolean, rolcreatedb: boolean, rolcreaterole: boolean, rolcanlogin: boolean }

async function roleOf (pool: pg.Pool): Promise<RoleFacts> {
  const { rows } = await pool.query<RoleFacts>('SELECT current_user AS user, rolsuper, rolcreatedb, rolcreaterole, rolcanlogin FROM pg_roles WHERE rolname = current_user')
  assert.ok(rows[0] !== undefined)
  return rows[0]
}

/** Owners of the service's tables and sequences, by name. */
async function owners (pool: pg.Pool): Promise<Record<string, string>> {
  const { rows } = await pool.query<{ name: string, owner: string }>(
    "SELECT c.relname AS name, pg_get_userbyid(c.relowner) AS owner FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'S')")
  return Object.fromEntries(rows.map((row) => [row.name, row.owner]))
}

describe('the embedded database: migrated as a migration role, served as a runtime role that cannot change a table', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-role-'))
  after(() => { fs.rmSync(dataDir, { recursive: true, force: true }) })
  const log = createLogger('silent')

  it('upgrades a data folder of an earlier version (tables owned by the superuser): the rows stay, the migration role owns everything, the service\'s role only reads and writes rows', async () => {
    // An earlier version: the service connected as the superuser and its migrations made the superuser the owner.
    const old = await startEmbeddedPostgres({ clusterDir: path.join(dataDir, 'pg') })
    try {
      await withPool(old.url, async (pool) => {
        await migrate(pool)
        assert.equal((await roleOf(pool)).rolsuper, true, 'the old way: a superuser')
        await pool.query("INSERT INTO users (email, password_hash) VALUES ('old@example.com', 'x')")
        await pool.query("INSERT INTO posts (author_id, title, body) SELECT id, 'kept', 'across the upgrade' FROM users")
      })
    } finally {
      await old.stop()
    }

    const database = await startDatabase({ databaseUrl: undefined, dataDir }, log)
    try {
      await withPool(database.url, async (pool) => {
        const role = await roleOf(pool)
        assert.deepEqual(role, { user: serviceRoleName, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolcanlogin: true })
        const owned = await owners(pool)
        assert.ok(Object.keys(owned).length >= 6, JSON.stringify(owned))
        for (const [name, owner] of Object.entries(owned)) assert.equal(owner, migrationRoleName, `${name} belongs to the migration role`)
        assert.equal((await pool.query('SELECT email FROM users')).rows[0]?.email, 'old@example.com')
        // The identity sequence is granted with its table: the service's role can insert.
        await pool.query("INSERT INTO posts (author_id, title, body) SELECT id, 'new', 'after the upgrade' FROM users")
        assert.equal((await pool.query('SELECT count(*)::int AS n FROM posts')).rows[0]?.n, 2)
        // No DDL: not the owner of the schema or of any table; no new roles or databases.
        await assert.rejects(pool.query('CREATE TABLE role_cannot_create (n int)'), { code: '42501' })
        await assert.rejects(pool.query('DROP TABLE posts'), { code: '42501' })
        await assert.rejects(pool.query('ALTER TABLE users ADD COLUMN intruder int'), { code: '42501' })
        await assert.rejects(pool.query('CREATE DATABASE not_allowed'), { code: '42501' })
      })
      await withPool(database.embedded?.migrationUrl ?? '', async (pool) => {
        const role = await roleOf(pool)
        assert.deepEqual(role, { user: migrationRoleName, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolcanlogin: true })
        // The next migration can create tables, and its runtime grant reaches them.
        await pool.query('CREATE TABLE migration_can_create (n int)')
        await grantRuntimeRole(pool, serviceRoleName)
      })
      await withPool(database.url, async (pool) => {
        await pool.query('INSERT INTO migration_can_create VALUES (1)')
      })
    } finally {
      await database.stop()
    }
    const passwordFile = path.join(dataDir, 'pg-service-password')
    assert.equal(fs.statSync(passwordFile).mode & 0o777, 0o600, 'the role\'s password is private to the owner')
    assert.ok(!database.url.includes('//tollbooth:'), 'the URL is not the superuser\'s')
  })

  it('creates a new database owned by the migration role, and migrates it as that role', async () => {
    const fresh = await startEmbeddedPostgres({ clusterDir: path.join(dataDir, 'pg'), databaseName: 'fresh', serviceRole: true })
    try {
      await withPool(fresh.migrationUrl, async (pool) => {
        assert.equal((await roleOf(pool)).rolsuper, false)
        await migrate(pool)
        for (const [name, owner] of Object.entries(await owners(pool))) assert.equal(owner, migrationRoleName, name)
        const { rows } = await pool.query<{ owner: string }>('SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = current_database()')
        assert.equal(rows[0]?.owner, migrationRoleName)
      })
    } finally {
      await fresh.stop()
    }
  })
})
