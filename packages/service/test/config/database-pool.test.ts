/**
 * The database pool's default size: two connections per CPU when PostgreSQL shares the machine
 * (embedded, loopback, a Unix socket), 10 when it runs elsewhere; a size given always wins.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { databaseOnThisMachine, defaultDatabasePoolSize } from '../../src/config/database-pool.js'
import { detectCpuBudget } from '../../src/machine/index.js'

const deployed = { TOLLBOOTH_KEY_ENCRYPTION_KEY: 'ab'.repeat(32), TOLLBOOTH_PUBLIC_URL: 'https://app.example.com' }

describe('where the database runs', () => {
  it('is this machine for the embedded one, loopback hosts and Unix sockets', () => {
    for (const url of [
      undefined,
      'postgres://u:p@127.0.0.1:5432/db',
      'postgres://u:p@127.3.4.5/db',
      'postgresql://u@localhost/db',
      'postgres://u@[::1]:5432/db',
      'postgres://u@db.internal/db?host=/run/pg',
      'postgres://u@%2Fvar%2Frun%2Fpostgresql/db',
    ]) assert.equal(databaseOnThisMachine(url), true, String(url))
  })

  it('is elsewhere for any other host', () => {
    for (const url of ['postgres://u:p@db.internal/db', 'postgres://u@10.0.0.5:5432/db', 'postgres://u@[2001:db8::1]/db', 'postgres://u@localhost.example.com/db']) {
      assert.equal(databaseOnThisMachine(url), false, url)
    }
  })
})

describe('the default pool size', () => {
  it('is two per CPU of the process\'s share on this machine, at least two', () => {
    assert.equal(defaultDatabasePoolSize(undefined, 2, 1), 4)
    assert.equal(defaultDatabasePoolSize('postgres://u@127.0.0.1/db', 8, 1), 16)
    assert.equal(defaultDatabasePoolSize('postgres://u@127.0.0.1/db', 8, 4), 4)
    assert.equal(defaultDatabasePoolSize(undefined, 1, 1), 2)
    assert.equal(defaultDatabasePoolSize(undefined, 2, 4), 2)
  })

  it('is 10 for a database elsewhere, whatever the CPU', () => {
    assert.equal(defaultDatabasePoolSize('postgres://u@db.internal/db', 1, 1), 10)
    assert.equal(defaultDatabasePoolSize('postgres://u@db.internal/db', 64, 1), 10)
  })

  it('is what the loaded config holds unless TOLLBOOTH_DB_POOL_SIZE says otherwise', () => {
    const cpus = detectCpuBudget().cpus
    assert.equal(loadConfig({ env: {} }).databasePoolSize, Math.max(2, 2 * cpus))
    assert.equal(loadConfig({ env: { TOLLBOOTH_WORKERS: String(cpus) } }).databasePoolSize, 2)
    assert.equal(loadConfig({ env: { ...deployed, DATABASE_URL: 'postgres://u:p@127.0.0.1/db' } }).databasePoolSize, Math.max(2, 2 * cpus))
    assert.equal(loadConfig({ env: { ...deployed, DATABASE_URL: 'postgres://u:p@db.internal/db' } }).databasePoolSize, 10)
    assert.equal(loadConfig({ env: { TOLLBOOTH_DB_POOL_SIZE: '25' } }).databasePoolSize, 25)
    assert.equal(loadConfig({ env: { ...deployed, DATABASE_URL: 'postgres://u:p@db.internal/db', TOLLBOOTH_DB_POOL_SIZE: '3' } }).databasePoolSize, 3)
  })
})
