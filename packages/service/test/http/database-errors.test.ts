import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { toTollboothError } from '../../src/http/error-handler.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'

/** The error PostgreSQL itself raises for `sql` with `params`. */
async function postgresError (db: TestDatabase, sql: string, params: unknown[] = []): Promise<Error> {
  try {
    await db.pool.query(sql, params)
  } catch (err) {
    return err as Error
  }
  assert.fail(`${sql} should have failed`)
}

describe('characters PostgreSQL cannot store (the backstop behind the schemas)', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })

  const cases: Array<[string, string, unknown[]]> = [
    ['22021', 'SELECT $1::text', ['nul \u0000 inside']],
    ['22P05', 'SELECT $1::jsonb', ['"\\u0000"']],
  ]
  for (const [sqlState, sql, params] of cases) {
    it(`${sqlState} becomes a 400 VALIDATION_FAILED, not a 500`, async () => {
      const err = await postgresError(db, sql, params)
      assert.equal((err as { code?: string }).code, sqlState, err.message)
      const mapped = toTollboothError(err)
      assert.equal(mapped.code, 'VALIDATION_FAILED')
      assert.equal(mapped.statusCode, 400)
    })
  }

  it('other database errors stay INTERNAL (500), their details kept out of the answer', async () => {
    const mapped = toTollboothError(await postgresError(db, 'SELECT $1::uuid', ['not-a-uuid']))
    assert.equal(mapped.code, 'INTERNAL')
    assert.equal(mapped.message, 'Internal server error')
  })
})
