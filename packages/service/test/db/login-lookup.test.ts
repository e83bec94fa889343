/**
 * The login's one-statement lookup reads what findUserByEmail and readFailures read apart: the
 * user (or none) and each key's failure count (or none), in every combination.
 */
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { lookUpLogin, readFailures, recordFailure, type ThrottleKeys } from '../../src/db/accounts/login-throttle.js'
import { insertSessionWithToken } from '../../src/db/accounts/sessions.js'
import { findUserByEmail, insertUser } from '../../src/db/accounts/users.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'

describe('lookUpLogin: the user and the failure counts in one statement', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })

  /** A sign-in's statement: a session, its refresh token and the device, as a login writes them. */
  async function signIn (userId: string, device: Buffer, maxDevicesPerUser: number): Promise<void> {
    const expiresAt = new Date(Date.now() + 60_000)
    await insertSessionWithToken(db.pool, { id: randomUUID(), userId, expiresAt, userAgent: null, address: null, amr: ['pwd'] }, { tokenHash: randomBytes(32), expiresAt }, { tokenHash: device, expiresAt, maxDevicesPerUser })
  }

  after(async () => { await db.drop() })

  const keysOf = (email: string): { account: string, address: string } => ({ account: email, address: `address-${randomUUID()}` })
  const anywhere = { sessionAddress: null, windowStartedAfter: 0, countAddressAccountsFrom: 0 }
  const failOnce = async (keys: ThrottleKeys, nowMs: number): Promise<void> => {
    await recordFailure(db.pool, keys, { nowMs, windowExpiredAtOrBefore: nowMs - 900_000 })
  }
  const assertSameAsApart = async (email: string, keys: ThrottleKeys & { account: string, address: string }): Promise<void> => {
    const together = await lookUpLogin(db.pool, email, keys, anywhere)
    assert.deepEqual(together, { user: await findUserByEmail(db.pool, email), failures: await readFailures(db.pool, keys), knownDevice: false, addressAccounts: 0, secondFactors: { totp: false, recoveryCodesLeft: 0 } })
  }

  it('nothing stored: no user, no counts', async () => {
    const email = `${randomUUID()}@example.com`
    const keys = keysOf(email)
    assert.deepEqual(await lookUpLogin(db.pool, email, keys, anywhere), { user: undefined, failures: {}, knownDevice: false, addressAccounts: 0, secondFactors: { totp: false, recoveryCodesLeft: 0 } })
    await assertSameAsApart(email, keys)
  })

  it('a user without failures, then with both counts, then with the address\'s alone', async () => {
    const email = `${randomUUID()}@example.com`
    const user = await insertUser(db.pool, { email, name: 'Ada', passwordHash: '$2b$04$abcdefghijklmnopqrstuv' })
    assert.ok(user !== undefined)
    const keys = keysOf(email)
    assert.deepEqual(await lookUpLogin(db.pool, email, keys, anywhere), { user, failures: {}, knownDevice: false, addressAccounts: 0, secondFactors: { totp: false, recoveryCodesLeft: 0 } })
    const nowMs = Date.parse('2030-01-01T00:00:00Z')
    await failOnce(keys, nowMs)
    await failOnce(keys, nowMs + 1000)
    const { failures } = await lookUpLogin(db.pool, email, keys, anywhere)
    assert.deepEqual(failures.account, { failures: 2, windowStartedAt: nowMs, lastFailureAt: nowMs + 1000 })
    assert.deepEqual(failures.address, { failures: 2, windowStartedAt: nowMs, lastFailureAt: nowMs + 1000 })
    await assertSameAsApart(email, keys)
    await db.pool.query("DELETE FROM login_failures WHERE scope = 'account' AND key = $1", [email])
    assert.deepEqual(Object.keys((await lookUpLogin(db.pool, email, keys, anywhere)).failures), ['address'])
    await assertSameAsApart(email, keys)
  })

  it('an unknown email with failures: no user, its counts', async () => {
    const email = `${randomUUID()}@example.com`
    const keys = keysOf(email)
    await failOnce(keys, Date.parse('2030-01-01T00:00:00Z'))
    const { user, failures } = await lookUpLogin(db.pool, email, keys, anywhere)
    assert.equal(user, undefined)
    assert.deepEqual(Object.keys(failures).sort(), ['account', 'address'])
    await assertSameAsApart(email, keys)
  })

  it('knows a device token only for its own user, and only until it expires', async () => {
    const email = `${randomUUID()}@example.com`
    const user = await insertUser(db.pool, { email, name: null, passwordHash: '$2b$04$abcdefghijklmnopqrstuv' })
    const other = await insertUser(db.pool, { email: `${randomUUID()}@example.com`, name: null, passwordHash: '$2b$04$abcdefghijklmnopqrstuv' })
    assert.ok(user !== undefined && other !== undefined)
    const device = randomBytes(32)
    const keys = { ...keysOf(email), device: device.toString('hex') }
    assert.equal((await lookUpLogin(db.pool, email, keys, anywhere)).knownDevice, false, 'not remembered yet')
    await signIn(user.id, device, 50)
    assert.equal((await lookUpLogin(db.pool, email, keys, anywhere)).knownDevice, true)
    assert.equal((await lookUpLogin(db.pool, other.email, { ...keys, account: other.email }, anywhere)).knownDevice, false, 'another account\'s device is no device of this one')
    await db.pool.query('UPDATE devices SET expires_at = now() - interval \'1 second\' WHERE token_hash = $1', [device])
    assert.equal((await lookUpLogin(db.pool, email, keys, anywhere)).knownDevice, false, 'expired')
  })

  it('a sign-in renews the device it came from, and keeps at most the bound of devices a user, the least recently used going first', async () => {
    const user = await insertUser(db.pool, { email: `${randomUUID()}@example.com`, name: null, passwordHash: '$2b$04$abcdefghijklmnopqrstuv' })
    assert.ok(user !== undefined)
    const [first, second, third] = [randomBytes(32), randomBytes(32), randomBytes(32)]
    await signIn(user.id, first, 2)
    await signIn(user.id, second, 2)
    await db.pool.query('UPDATE devices SET last_used_at = now() - interval \'1 hour\' WHERE token_hash = $1', [second])
    await signIn(user.id, first, 2)
    await signIn(user.id, third, 2)
    const { rows } = await db.pool.query<{ token_hash: Buffer }>('SELECT token_hash FROM devices WHERE user_id = $1', [user.id])
    assert.deepEqual(rows.map((row) => row.token_hash.toString('hex')).sort(), [first, third].map((token) => token.toString('hex')).sort(), 'the second, least recently used, gave way')
    // Another user's sign-in with a token this user holds takes nothing of it.
    const other = await insertUser(db.pool, { email: `${randomUUID()}@example.com`, name: null, passwordHash: '$2b$04$abcdefghijklmnopqrstuv' })
    assert.ok(other !== undefined)
    await signIn(other.id, first, 2)
    const owner = await db.pool.query<{ user_id: string }>('SELECT user_id FROM devices WHERE token_hash = $1', [first])
    assert.equal(owner.rows[0]?.user_id, user.id)
  })

  it('counts the accounts that opened a session from the address in the window', async () => {
    const address = '192.0.2.77'
    const users = await Promise.all([1, 2, 3].map(async () => await insertUser(db.pool, { email: `${randomUUID()}@example.com`, name: null, passwordHash: '$2b$04$abcdefghijklmnopqrstuv' })))
    for (const [index, user] of users.entries()) {
      assert.ok(user !== undefined)
      await db.pool.query('INSERT INTO sessions (id, user_id, expires_at, address, created_at) VALUES ($1, $2, now() + interval \'1 day\', $3, now() - make_interval(mins => $4))', [randomUUID(), user.id, address, index === 2 ? 60 : 1])
    }
    const email = `${randomUUID()}@example.com`
    const keys = keysOf(email)
    const from = { sessionAddress: address, windowStartedAfter: Date.now() - 15 * 60_000 }
    assert.equal((await lookUpLogin(db.pool, email, keys, { ...from, countAddressAccountsFrom: 0 })).addressAccounts, 2, 'the third signed in before the window')
    // Counted only from the address's given failures on: below them, the scan of its sessions is skipped.
    assert.equal((await lookUpLogin(db.pool, email, keys, { ...from, countAddressAccountsFrom: 2 })).addressAccounts, undefined, 'no failure recorded')
    const nowMs = Date.now()
    await failOnce(keys, nowMs)
    assert.equal((await lookUpLogin(db.pool, email, keys, { ...from, countAddressAccountsFrom: 2 })).addressAccounts, undefined, 'one failure of two')
    await failOnce(keys, nowMs)
    assert.equal((await lookUpLogin(db.pool, email, keys, { ...from, countAddressAccountsFrom: 2 })).addressAccounts, 2, 'two failures of two')
  })
})

describe('the throttle\'s table', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })

  it('is unlogged: a login\'s claim and its outcome wait for no WAL flush, and a crash empties it', async () => {
    const { rows } = await db.pool.query<{ relname: string, relpersistence: string }>("SELECT relname, relpersistence FROM pg_class WHERE relname IN ('login_failures', 'sessions', 'users', 'devices') ORDER BY relname")
    assert.deepEqual(rows.map((row) => [row.relname, row.relpersistence]), [['devices', 'p'], ['login_failures', 'u'], ['sessions', 'p'], ['users', 'p']])
  })
})
