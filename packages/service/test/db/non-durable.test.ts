import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pg from 'pg'
import { adminDatabaseUrl } from '../helpers/database.js'

// npm test starts its PostgreSQL with startDatabase({ nonDurable: true }) (scripts/run-tests.ts); a
// server given by DATABASE_URL is the caller's and keeps its own settings.
describe('the test suite\'s embedded PostgreSQL', { skip: process.env.DATABASE_URL !== undefined && process.env.DATABASE_URL !== '' }, () => {
  it('runs without fsync, synchronous commit or full-page writes (throwaway data)', async () => {
    const client = new pg.Client({ connectionString: adminDatabaseUrl() })
    await client.connect()
    try {
      for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes']) {
        const { rows } = await client.query<Record<string, string>>(`SHOW ${setting}`)
        assert.equal(rows[0]?.[setting], 'off', setting)
      }
    } finally {
      await client.end()
    }
  })
})
