/**
 * Least privilege with DATABASE_URL: a migration role owns the schema, `tollbooth migrate` grants
 * the runtime role rows only, and a real `tollbooth serve` connected as the runtime role works
 * and cannot change a table.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { migrateAtStart, readMigrations } from '../../src/db/migrate.js'
import { createDatabasePool } from '../../src/db/pool.js'
import { startServe, type ServeProcess } from '../../src/launcher/index.js'
import { packageRoot } from '../../src/paths.js'
import { adminDatabaseUrl } from '../helpers/database.js'
import { request, serveEnv, uniqueEmail } from '../helpers/service.js'

const bin = path.join(packageRoot, 'bin', 'tollbooth.js')

function runMigrate (env: NodeJS.ProcessEnv): { status: number | null, stdout: string, stderr: string } {
  const result = spawnSync(process.execPath, [bin, 'migrate'], { encoding: 'utf8', env })
  return { status: result.status, stdout: result.stdout, stderr: result.stderr }
}

/** `admin` with another user and database. */
function urlAs (admin: string, user: string, password: string, database: string): string {
  const url = new URL(admin)
  url.username = user
  url.password = password
  url.pathname = `/${database}`
  return url.toString()
}

describe('a migration role and a runtime role on one database (DATABASE_URL)', () => {
  const suffix = randomBytes(4).toString('hex')
  const names = { migration: `tb_migrator_${suffix}`, runtime: `tb_runtime_${suffix}`, database: `tb_roles_${suffix}` }
  const passwords = { migration: randomBytes(12).toString('hex'), runtime: randomBytes(12).toString('hex') }
  let urls: { migration: string, runtime: string }
  let runtime: pg.Pool
  let serve: ServeProcess | undefined

  before(async () => {
    const admin = new pg.Client({ connectionString: adminDatabaseUrl() })
    await admin.connect()
    try {
      for (const role of ['migration', 'runtime'] as const) {
        await admin.query(`CREATE ROLE ${names[role]} LOGIN PASSWORD '${passwords[role]}'`)
      }
      // As a deployment sets it up: the migration role owns the database (and so, on PostgreSQL 15, its public schema).
      await admin.query(`CREATE DATABASE ${names.database} OWNER ${names.migration}`)
    } finally {
      await admin.end()
    }
    urls = {
      migration: urlAs(adminDatabaseUrl(), names.migration, passwords.migration, names.database),
      runtime: urlAs(adminDatabaseUrl(), names.runtime, passwords.runtime, names.database),
    }
    const migrated = runMigrate({ ...process.env, DATABASE_URL: urls.migration, TOLLBOOTH_RUNTIME_ROLE: names.runtime })
    assert.equal(migrated.status, 0, migrated.stderr)
    assert.deepEqual(JSON.parse(migrated.stdout), { msg: 'migrations applied', applied: readMigrations().map((m) => m.name), runtimeRole: names.runtime })
    runtime = createDatabasePool(urls.runtime, 2)
  })

  after(async () => {
    await serve?.stop()
    await runtime?.end()
    const admin = new pg.Client({ connectionString: adminDatabaseUrl() })
    await admin.connect()
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${names.database} WITH (FORCE)`)
      for (const role of [names.runtime, names.migration]) await admin.query(`DROP ROLE IF EXISTS ${role}`)
    } finally {
      await admin.end()
    }
  })

  it('the runtime role cannot create, alter, drop or truncate a table, nor write the migrations\' record', async () => {
    const refused = [
      'CREATE TABLE intruder (n int)',
      'DROP TABLE posts',
      'ALTER TABLE users ADD COLUMN intruder int',
      'TRUNCATE login_failures',
      'CREATE SCHEMA intruder',
      'CREATE INDEX intruder ON users (created_at)',
      "INSERT INTO schema_migrations (version, name, checksum) VALUES (999, '999_intruder', 'x')",
      'DELETE FROM schema_migrations',
    ]
    for (const statement of refused) {
      await assert.rejects(runtime.query(statement), { code: '42501' }, statement)
    }
    const { rows } = await runtime.query<{ n: number }>("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN ('intruder', 'posts')")
    assert.equal(rows[0]?.n, 1, 'posts is still there; nothing was created')
  })

  it('it reads and writes rows: a real `tollbooth serve` connected as it registers, signs in and ends a session', async () => {
    serve = await startServe({ env: serveEnv(urls.runtime), tailLines: 200, startTimeoutMs: 90_000 })
    assert.ok(!serve.logTail().includes('"msg":"migrations applied"'), 'serve applied nothing')
    const email = uniqueEmail('runtime-role')
    const password = 'a runtime password'
    assert.equal((await request(serve, 'POST', '/api/v1/auth/register', { body: { email, password } })).status, 201)
    const login = await request(serve, 'POST', '/api/v1/auth/login', { body: { email, password } })
    assert.equal(login.status, 200, JSON.stringify(login.body))
    assert.equal((await request(serve, 'GET', '/api/v1/me', { token: login.body.accessToken })).status, 200)
    assert.equal((await request(serve, 'POST', '/api/v1/posts', { token: login.body.accessToken, body: { title: 'rows', body: 'only rows' } })).status, 201)
    assert.equal((await request(serve, 'POST', '/api/v1/auth/logout', { body: { refreshToken: login.body.refreshToken } })).status, 204)
    const { rows } = await runtime.query<{ n: number }>('SELECT count(*)::int AS n FROM signing_keys')
    assert.ok((rows[0]?.n ?? 0) >= 1, 'serve created its signing key as the runtime role')
  })

  it('serve refuses to start on a pending migration its role may not apply, and says what to run', async () => {
    const next = { version: 9999, name: '9999_next_release', sql: 'CREATE TABLE next_release (n int)', checksum: 'next' }
    assert.deepEqual(await migrateAtStart(runtime), [], 'the schema is current: nothing to do, no DDL tried')
    await assert.rejects(migrateAtStart(runtime, [...readMigrations(), next]), (err: Error) => {
      assert.match(err.message, /1 migration\(s\) pending \(9999_next_release\)/)
      assert.match(err.message, /tollbooth migrate/)
      return true
    })
  })

  it('`tollbooth migrate` refuses a runtime role that does not exist, or one that could run DDL', () => {
    const missing = runMigrate({ ...process.env, DATABASE_URL: urls.migration, TOLLBOOTH_RUNTIME_ROLE: `tb_nobody_${suffix}` })
    assert.equal(missing.status, 1)
    assert.match(missing.stderr, /does not exist/)
    const owner = runMigrate({ ...process.env, DATABASE_URL: urls.migration, TOLLBOOTH_RUNTIME_ROLE: names.migration })
    assert.equal(owner.status, 1)
    assert.match(owner.stderr, /owns the schema or is a superuser/)
  })

  it('`tollbooth migrate` run as the runtime role says to run it as the migration role, without a stack trace', async () => {
    const fresh = `tb_roles_empty_${suffix}`
    const admin = new pg.Client({ connectionString: adminDatabaseUrl() })
    await admin.connect()
    try {
      await admin.query(`CREATE DATABASE ${fresh} OWNER ${names.migration}`)
      const asRuntime = runMigrate({ ...process.env, DATABASE_URL: urlAs(adminDatabaseUrl(), names.runtime, passwords.runtime, fresh) })
      assert.equal(asRuntime.status, 1)
      assert.match(asRuntime.stderr, /may not change the schema.*migration role/)
      assert.doesNotMatch(asRuntime.stderr, /\n\s+at /, 'no stack trace')
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${fresh} WITH (FORCE)`)
      await admin.end()
    }
  })
})
