/**
 * The launcher's database meter on a real embedded PostgreSQL started with pg_stat_statements:
 * it counts the statements others ran (not its own readings) and the WAL they wrote; on a
 * database without the extension it still reads the WAL and says the count is unknown.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { openDatabaseMeter, startDatabase, type LaunchedDatabase } from '../../src/launcher/index.js'

let database: LaunchedDatabase
before(async () => { database = await startDatabase({ label: 'meter', nonDurable: true, statementStatistics: true }) })
after(async () => { await database.stop() })

describe('the database meter', () => {
  it('counts the statements run and the WAL written between two readings, leaving its own out', async () => {
    const meter = await openDatabaseMeter(database.url)
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    try {
      await client.query('CREATE TABLE metered (id int PRIMARY KEY, note text)')
      const before = await meter.read()
      const idle = await meter.read()
      assert.equal(idle.statements, before.statements, 'a reading is not counted by the next')
      for (let id = 1; id <= 20; id++) await client.query('INSERT INTO metered VALUES ($1, $2)', [id, 'x'.repeat(200)])
      const after = await meter.read()
      assert.equal((after.statements ?? 0) - (before.statements ?? 0), 20, 'the twenty inserts, one statement each')
      assert.ok(after.walBytes - before.walBytes >= 20 * 200, `WAL grew by at least the rows written (${after.walBytes - before.walBytes} bytes)`)
      assert.ok(Number.isInteger(after.backendPid) && after.backendPid > 0)
    } finally {
      await client.end()
      await meter.close()
    }
  })

  it('reads the WAL of a database without pg_stat_statements, and says the count is unknown', async () => {
    const plain = await startDatabase({ label: 'meter-plain', nonDurable: true })
    try {
      const meter = await openDatabaseMeter(plain.url)
      try {
        const reading = await meter.read()
        assert.equal(reading.statements, null)
        assert.ok(reading.walBytes > 0)
      } finally {
        await meter.close()
      }
    } finally {
      await plain.stop()
    }
  })
})
