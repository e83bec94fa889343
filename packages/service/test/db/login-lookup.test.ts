/**
 * The login's one-statement lookup reads what findUserByEmail and readFailures read apart: the
 * user (or none) and each key's failure count (or none), in every combination.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { lookUpLogin, readFailures, recordFailure, type ThrottleKeys } from '../../src/db/login-throttle.js'
import { findUserByEmail, insertUser } from '../../src/db/users.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'

describe('lookUpLogin: the user and the failure counts in one statement', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })

  const keysOf = (email: string): ThrottleKeys => ({ account: email, address: `address-${randomUUID()}` })
  const failOnce = async (keys: ThrottleKeys, nowMs: number): Promise<void> => {
    await recordFailure(db.pool, keys, { nowMs, windowExpiredAtOrBefore: nowMs - 900_000 })
  }
  const assertSameAsApart = async (email: string, keys: ThrottleKeys): Promise<void> => {
    const together = await lookUpLogin(db.pool, email, keys)
    assert.deepEqual(together, { user: await findUserByEmail(db.pool, email), failures: await readFailures(db.pool, keys) })
  }

  it('nothing stored: no user, no counts', async () => {
    const email = `${randomUUID()}@example.com`
    const keys = keysOf(email)
    assert.deepEqual(await lookUpLogin(db.pool, email, keys), { user: undefined, failures: {} })
    await assertSameAsApart(email, keys)
  })

  it('a user without failures, then with both counts, then with the address\'s alone', async () => {
    const email = `${randomUUID()}@example.com`
    const user = await insertUser(db.pool, { email, name: 'Ada', passwordHash: '$2b$04$abcdefghijklmnopqrstuv' })
    assert.ok(user !== undefined)
    const keys = keysOf(email)
    assert.deepEqual(await lookUpLogin(db.pool, email, keys), { user, failures: {} })
    const nowMs = Date.parse('2030-01-01T00:00:00Z')
    await failOnce(keys, nowMs)
    await failOnce(keys, nowMs + 1000)
    const { failures } = await lookUpLogin(db.pool, email, keys)
    assert.deepEqual(failures.account, { failures: 2, windowStartedAt: nowMs, lastFailureAt: nowMs + 1000 })
    assert.deepEqual(failures.address, { failures: 2, windowStartedAt: nowMs, lastFailureAt: nowMs + 1000 })
    await assertSameAsApart(email, keys)
    await db.pool.query("DELETE FROM login_failures WHERE scope = 'account' AND key = $1", [email])
    assert.deepEqual(Object.keys((await lookUpLogin(db.pool, email, keys)).failures), ['address'])
    await assertSameAsApart(email, keys)
  })

  it('an unknown email with failures: no user, its counts', async () => {
    const email = `${randomUUID()}@example.com`
    const keys = keysOf(email)
    await failOnce(keys, Date.parse('2030-01-01T00:00:00Z'))
    const { user, failures } = await lookUpLogin(db.pool, email, keys)
    assert.equal(user, undefined)
    assert.deepEqual(Object.keys(failures).sort(), ['account', 'address'])
    await assertSameAsApart(email, keys)
  })
})
