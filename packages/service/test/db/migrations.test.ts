import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { migrate, readMigrations } from '../../src/db/migrate.js'
import { createDatabasePool } from '../../src/db/pool.js'
import { createTestDatabase } from '../helpers/database.js'

describe('migrations', () => {
  it('apply once when several instances start at the same moment', async () => {
    const db = await createTestDatabase({ migrate: false })
    const pools = [0, 1, 2, 3].map(() => createDatabasePool(db.url, 2))
    try {
      const results = await Promise.all(pools.map(async (pool) => await migrate(pool)))
      const appliedNames = results.flat()
      assert.deepEqual(appliedNames, readMigrations().map((m) => m.name))
      const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations')
      assert.equal(rows[0]?.n, readMigrations().length)
      assert.deepEqual(await migrate(db.pool), [])
    } finally {
      await Promise.all(pools.map(async (pool) => await pool.end()))
      await db.drop()
    }
  })

  it('refuse a migration file edited after it was applied', async () => {
    const db = await createTestDatabase()
    try {
      const edited = readMigrations().map((m, i) => (i === 0 ? { ...m, checksum: 'edited' } : m))
      await assert.rejects(migrate(db.pool, edited), /edited after it was applied/)
    } finally {
      await db.drop()
    }
  })

  it('roll back a failing migration completely', async () => {
    const db = await createTestDatabase()
    try {
      const broken = [...readMigrations(), { version: 999, name: '999_broken', sql: 'CREATE TABLE half_done (id int); SELECT * FROM no_such_table;', checksum: 'x' }]
      await assert.rejects(migrate(db.pool, broken))
      const { rows } = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'half_done'")
      assert.equal(rows[0]?.n, 0)
    } finally {
      await db.drop()
    }
  })
})
