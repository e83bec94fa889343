/**
 * `lab compare` end to end: the lab starts a real tollbooth (bin/tollbooth.js) per strategy on
 * a real PostgreSQL database, measures each with the same short load, and stops it.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { labCompare } from '../src/lab.js'
import { createTestDatabase, type TestDatabase } from './helpers/database.js'

const quiet = { log: () => {} }

describe('lab compare: the service started once per strategy on one database', () => {
  let database: TestDatabase
  before(async () => { database = await createTestDatabase() })
  after(async () => { await database.drop() })

  it('measures each strategy with the same load, and reads each one\'s whole process tree', async () => {
    const result = await labCompare({
      ...quiet,
      scenario: 'login-storm',
      strategies: ['event-loop', 'tollbooth'],
      databaseUrl: database.url,
      serviceEnv: { TOLLBOOTH_BCRYPT_COST: '4', TOLLBOOTH_HASH_THREADS: '1' },
      load: { durationMs: 1000, vus: 2, accounts: 3 },
    })
    assert.deepEqual(result.runs.map((run) => run.label), ['event-loop', 'tollbooth'])
    assert.deepEqual(result.warnings.filter((w) => /did not start|threw/.test(w)), [])
    for (const run of result.runs) {
      assert.equal(run.service.startedByLab, true)
      assert.equal(run.service.strategy, run.label)
      assert.equal(run.service.settings.TOLLBOOTH_HASH_ALGORITHM, 'bcrypt', 'the seeds\' algorithm by default')
      assert.ok(run.all.ok > 0 && run.all.ok === run.all.requests, `${run.label}: ${run.all.ok}/${run.all.requests}`)
      assert.ok(run.server.some((s) => s.processTreeCpuCores !== null && s.processTreeRssBytes !== null), `${run.label}: /proc read`)
      assert.ok(run.summary.peakRssBytes !== null && run.summary.peakRssBytes > 10_000_000, `${run.label}: RSS`)
    }
  })
})
