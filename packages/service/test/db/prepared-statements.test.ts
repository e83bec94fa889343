/**
 * The pool's queries with parameters go as named prepared statements (src/db/prepared-client.ts),
 * seen from PostgreSQL's side: `pg_prepared_statements` lists a connection's own.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type pg from 'pg'
import { loadConfig } from '../../src/config/index.js'
import { createDatabasePool, withTransaction, type DatabasePool } from '../../src/db/pool.js'
import { maxNamedStatements, statementName } from '../../src/db/prepared-client.js'
import { findUserById, insertUser } from '../../src/db/accounts/users.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'

/** The statements this connection has prepared, by their text. */
async function preparedOn (client: pg.PoolClient): Promise<Map<string, string>> {
  const { rows } = await client.query<{ name: string, statement: string }>('SELECT name, statement FROM pg_prepared_statements')
  return new Map(rows.map((row) => [row.statement, row.name]))
}

describe('named prepared statements', () => {
  let db: TestDatabase
  /** One connection, so every query below lands on the backend the assertions read. */
  let pool: DatabasePool
  let unnamedPool: DatabasePool
  before(async () => {
    db = await createTestDatabase()
    pool = createDatabasePool(db.url, 1)
    unnamedPool = createDatabasePool(db.url, 1, { preparedStatements: false })
  })
  after(async () => {
    await pool.end()
    await unnamedPool.end()
    await db.drop()
  })

  const newUser = async (): Promise<string> => {
    const user = await insertUser(db.pool, { email: `${randomUUID()}@example.com`, name: null, passwordHash: '$2b$04$abcdefghijklmnopqrstuv' })
    assert.ok(user !== undefined)
    return user.id
  }

  it('prepares a query with parameters once per connection, under its text\'s name, and answers each call with its own values', async () => {
    const [first, second] = [await newUser(), await newUser()]
    assert.equal((await findUserById(pool, first))?.id, first)
    assert.equal((await findUserById(pool, second))?.id, second)
    assert.equal(await findUserById(pool, randomUUID()), undefined)
    const client = await pool.connect()
    try {
      const prepared = await preparedOn(client)
      const byId = [...prepared].filter(([text]) => text.includes('FROM users WHERE id = $1'))
      assert.equal(byId.length, 1, `one statement for the three calls: ${JSON.stringify([...prepared])}`)
      assert.equal(byId[0]![1], statementName(byId[0]![0]))
      // The query without parameters that read the list is not among them.
      assert.ok(![...prepared.keys()].some((text) => text.includes('pg_prepared_statements')))
    } finally {
      client.release()
    }
  })

  it('two texts, two statements: each call runs its own', async () => {
    const one = await pool.query<{ n: number }>('SELECT $1::int + 1 AS n', [1])
    const two = await pool.query<{ n: number }>('SELECT $1::int + 2 AS n', [1])
    const again = await pool.query<{ n: number }>('SELECT $1::int + 1 AS n', [5])
    assert.deepEqual([one.rows[0]?.n, two.rows[0]?.n, again.rows[0]?.n], [2, 3, 6])
    assert.notEqual(statementName('SELECT $1::int + 1 AS n'), statementName('SELECT $1::int + 2 AS n'))
  })

  it('a statement PostgreSQL refused to parse is parsed again at its next call, not taken as prepared', async () => {
    const broken = 'SELECT $1::int FROM no_such_table'
    for (let attempt = 0; attempt < 2; attempt++) {
      await assert.rejects(pool.query(broken, [1]), (err: { code?: string }) => err.code === '42P01')
    }
    assert.equal((await pool.query<{ n: number }>('SELECT $1::int AS n', [7])).rows[0]?.n, 7)
  })

  it('a statement first prepared in a transaction that rolled back still runs on that connection', async () => {
    const text = `SELECT $1::text AS t, '${randomUUID()}' AS fresh`
    await assert.rejects(withTransaction(pool, async (client) => {
      assert.equal((await client.query<{ t: string }>(text, ['in'])).rows[0]?.t, 'in')
      throw new Error('roll back')
    }), /roll back/)
    assert.equal((await pool.query<{ t: string }>(text, ['after'])).rows[0]?.t, 'after')
  })

  it('a failure while executing leaves the statement usable', async () => {
    const id = await newUser()
    const text = 'INSERT INTO users (id, email, password_hash) VALUES ($1, $2, $3)'
    await assert.rejects(pool.query(text, [id, `${randomUUID()}@example.com`, 'x']), (err: { code?: string }) => err.code === '23505')
    const fresh = randomUUID()
    await pool.query(text, [fresh, `${randomUUID()}@example.com`, 'x'])
    assert.equal((await findUserById(pool, fresh))?.id, fresh)
  })

  it('a value pg cannot send leaves the statement usable: pg prepares it again at its next use', async () => {
    const text = `SELECT $1::text AS t, '${randomUUID()}' AS fresh`
    assert.equal((await pool.query<{ t: string }>(text, ['a'])).rows[0]?.t, 'a')
    const unsendable = { toPostgres: () => { throw new Error('cannot be sent') } }
    await assert.rejects(withTransaction(pool, async (client) => { await client.query(text, [unsendable]) }), /cannot be sent/)
    await withTransaction(pool, async (client) => { assert.equal((await client.query<{ t: string }>(text, ['b'])).rows[0]?.t, 'b') })
    assert.equal((await pool.query<{ t: string }>(text, ['c'])).rows[0]?.t, 'c')
  })

  it('a statement whose result type a migration changed fails once (0A000), and its connection is not kept', async () => {
    const table = `prepared_${randomUUID().replaceAll('-', '')}`
    await db.pool.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v int)`)
    await db.pool.query(`INSERT INTO ${table} VALUES (1, 42)`)
    const text = `SELECT v FROM ${table} WHERE id = $1`
    await withTransaction(pool, async (client) => { assert.equal((await client.query<{ v: unknown }>(text, [1])).rows[0]?.v, 42) })
    await db.pool.query(`ALTER TABLE ${table} ALTER COLUMN v TYPE text`)
    await assert.rejects(withTransaction(pool, async (client) => { await client.query(text, [1]) }), (err: { code?: string }) => err.code === '0A000')
    await withTransaction(pool, async (client) => { assert.equal((await client.query<{ v: unknown }>(text, [1])).rows[0]?.v, '42') })
  })

  it('with preparedStatements: false, nothing is prepared', async () => {
    const id = await newUser()
    assert.equal((await findUserById(unnamedPool, id))?.id, id)
    const client = await unnamedPool.connect()
    try {
      assert.deepEqual([...(await preparedOn(client))], [])
    } finally {
      client.release()
    }
  })
})

describe('TOLLBOOTH_DB_STATEMENTS', () => {
  it('named unless set to unnamed, by the environment or the flag; nothing else', () => {
    assert.equal(loadConfig({ env: {} }).databaseStatements, 'named')
    assert.equal(loadConfig({ env: { TOLLBOOTH_DB_STATEMENTS: 'unnamed' } }).databaseStatements, 'unnamed')
    assert.equal(loadConfig({ env: {}, argv: ['--db-statements', 'unnamed'] }).databaseStatements, 'unnamed')
    assert.throws(() => loadConfig({ env: { TOLLBOOTH_DB_STATEMENTS: 'false' } }), (err: { code?: string }) => err.code === 'CONFIG_INVALID')
  })
})

describe('statementName', () => {
  it('one name per text; past maxNamedStatements texts, new ones go unnamed and the named keep theirs', () => {
    const first = statementName('SELECT $1::int AS first_of_the_cap_test')
    assert.ok(first !== undefined)
    assert.equal(statementName('SELECT $1::int AS first_of_the_cap_test'), first)
    // This file's process names its texts from here on, so this test comes last.
    let unnamed = 0
    for (let k = 0; k <= maxNamedStatements; k++) if (statementName(`SELECT $1::int AS cap_${k}`) === undefined) unnamed++
    assert.ok(unnamed >= 1, 'the cap was never reached')
    assert.equal(statementName('SELECT $1::int AS first_of_the_cap_test'), first)
    assert.equal(statementName(`SELECT $1::int AS cap_${maxNamedStatements}`), undefined)
  })
})
