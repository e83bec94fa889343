/**
 * DatabasePool.end() resolves once its connections are closed, not merely asked to close (as
 * pg-pool's own end() does): the embedded PostgreSQL is stopped right after it, at shutdown and
 * in tests, and a backend still open then ends its client with 57P01.
 */
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { after, before, describe, it } from 'node:test'
import { createDatabasePool } from '../../src/db/pool.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { startTcpProxy } from '../helpers/net/tcp-proxy.js'

describe('DatabasePool.end()', () => {
  let database: TestDatabase
  before(async () => { database = await createTestDatabase({ migrate: false }) })
  after(async () => { await database.drop() })

  /** Backends of the pool's application name on the test's database, as the server sees them now. */
  async function poolBackends (): Promise<number> {
    const { rows } = await database.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tollbooth' AND pid <> pg_backend_pid()")
    return rows[0]?.n ?? -1
  }

  it('resolves once the server has no backend of the pool left', async () => {
    const pool = createDatabasePool(database.url, 12)
    // Twelve connections at once, all idle in the pool when end() is called.
    await Promise.all(Array.from({ length: 12 }, async () => await pool.query('SELECT pg_sleep(0.05)')))
    assert.equal(pool.totalCount, 12)
    // The test database's own pool (also 'tollbooth') asks one query at a time, on one connection: the one left out.
    const before = await poolBackends()
    assert.equal(before, 12, 'the server sees the pool\'s connections')
    await pool.end()
    assert.equal(await poolBackends(), 0, 'no backend of the pool left once end() has resolved')
  })

  it('takes a callback as pg-pool does, called once the connections are closed', async () => {
    const pool = createDatabasePool(database.url, 2)
    await Promise.all([pool.query('SELECT 1'), pool.query('SELECT pg_sleep(0.02)')])
    await new Promise<void>((resolve) => { pool.end(resolve) })
    assert.equal(await poolBackends(), 0)
  })

  it('resolves after closeTimeoutMs when the server has gone silent, so a shutdown during an outage is not held', async () => {
    const proxy = await startTcpProxy(database.url)
    const pool = createDatabasePool(proxy.proxied(database.url), 2, { closeTimeoutMs: 300, log: { warn () {} } })
    try {
      await Promise.all([pool.query('SELECT 1'), pool.query('SELECT pg_sleep(0.02)')])
      assert.equal(pool.totalCount, 2)
      proxy.freeze() // the goodbye goes out and nothing comes back
      const started = performance.now()
      let hung: NodeJS.Timeout | undefined
      const outcome = await Promise.race([
        pool.end().then(() => 'ended'),
        new Promise((resolve) => { hung = setTimeout(resolve, 10_000, 'still waiting after 10 s') }),
      ])
      clearTimeout(hung)
      assert.equal(outcome, 'ended')
      // A timer never fires early: it waited for the silent connections, then gave up on them.
      assert.ok(performance.now() - started >= 290, 'it waited for the connections first')
    } finally {
      proxy.thaw()
      await proxy.close()
    }
  })

  it('resolves at once for a pool that never connected', async () => {
    const pool = createDatabasePool(database.url, 2)
    await pool.end()
    assert.equal(pool.totalCount, 0)
  })
})
