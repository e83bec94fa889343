/**
 * `lab compare` end to end: the lab starts a real tollbooth (bin/tollbooth.js) per strategy and kind of client on
 * a real PostgreSQL database, measures each with the same short load, and stops it.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { labCompare } from '../src/lab.js'
import { renderText } from '../src/report/index.js'
import { createTestDatabase, type TestDatabase } from './helpers/database.js'

const quiet = { log: () => {} }

describe('lab compare with polite and naive clients', () => {
  let database: TestDatabase
  before(async () => { database = await createTestDatabase() })
  after(async () => { await database.drop() })

  it('measures each strategy once per kind of client, in one run', async () => {
    const result = await labCompare({
      ...quiet,
      scenario: 'login-storm',
      strategies: ['tollbooth'],
      clients: ['polite', 'naive'],
      databaseUrl: database.url,
      serviceEnv: { TOLLBOOTH_BCRYPT_COST: '4', TOLLBOOTH_HASH_THREADS: '1' },
      load: { durationMs: 1000, vus: 2, accounts: 2 },
    })
    assert.deepEqual(result.runs.map((run) => [run.label, run.clients]), [['tollbooth polite', 'polite'], ['tollbooth naive', 'naive']])
    assert.equal(result.load.politeAndNaive, true)
    for (const run of result.runs) assert.ok(run.all.ok > 0, `${run.label}: ${run.all.ok}/${run.all.requests}`)
    // The description wraps at the terminal's width: any run of spaces may be a line break and an indent.
    assert.match(renderText(result), /polite clients\s+\(Retry-After\s+honoured\)\s+and\s+naive\s+ones/)
  })
})
