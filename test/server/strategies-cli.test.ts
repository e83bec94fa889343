import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startCli, stopCli, type StartedCli } from '../helpers/cli.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { request, testJwtSecret } from '../helpers/service.js'

async function startWithStrategy (db: TestDatabase, args: string[]): Promise<StartedCli> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: db.url,
    TOLLBOOTH_JWT_SECRET: testJwtSecret,
    PORT: '0',
    TOLLBOOTH_LOG_LEVEL: 'info',
    TOLLBOOTH_HASH_ALGORITHM: 'bcrypt',
    TOLLBOOTH_BCRYPT_COST: '4',
  }
  delete env.UV_THREADPOOL_SIZE
  return await startCli(env, args, 30_000)
}

async function metric (url: string, name: string): Promise<string | undefined> {
  const text = (await request({ url }, 'GET', '/metrics')).body as string
  return text.split('\n').find((line) => line.startsWith(name))
}

describe('starting the service with each hash strategy', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })

  for (const strategy of ['event-loop', 'libuv', 'libuv-128', 'spawn', 'piscina', 'tollbooth']) {
    it(`--hash-strategy ${strategy} serves logins and says so in /metrics`, async () => {
      const started = await startWithStrategy(db, ['--hash-strategy', strategy])
      try {
        const account = { email: `${strategy}@example.com`, password: 'strategy password' }
        assert.equal((await request(started, 'POST', '/api/v1/auth/register', { body: account })).status, 201)
        assert.equal((await request(started, 'POST', '/api/v1/auth/login', { body: account })).status, 200)
        assert.match(await metric(started.url, 'tollbooth_hash_pool_info') ?? '', new RegExp(`strategy="${strategy}"`))
        if (strategy === 'libuv-128') assert.equal(await metric(started.url, 'tollbooth_hash_pool_threads'), 'tollbooth_hash_pool_threads 128')
        if (strategy === 'libuv') assert.equal(await metric(started.url, 'tollbooth_hash_pool_threads'), 'tollbooth_hash_pool_threads 4')
      } finally {
        assert.equal(await stopCli(started), 0)
      }
    })
  }

  it('--hash-strategy cluster forks one worker per CPU behind one port, and stops them all', async () => {
    const started = await startWithStrategy(db, ['--hash-strategy', 'cluster', '--hash-threads', '2'])
    try {
      const account = { email: 'cluster@example.com', password: 'cluster password' }
      assert.equal((await request(started, 'POST', '/api/v1/auth/register', { body: account })).status, 201)
      const logins = await Promise.all(Array.from({ length: 8 }, async () => await request(started, 'POST', '/api/v1/auth/login', { body: account })))
      assert.deepEqual(logins.map((r) => r.status), Array(8).fill(200))
      // A token from one worker is accepted by the others: they share the key.
      const me = await Promise.all(Array.from({ length: 6 }, async () => await request(started, 'GET', '/api/v1/me', { token: logins[0]?.body.accessToken })))
      assert.deepEqual(me.map((r) => r.status), Array(6).fill(200))
      assert.match(await metric(started.url, 'tollbooth_hash_pool_info') ?? '', /strategy="piscina"/)
    } finally {
      assert.equal(await stopCli(started), 0)
    }
  })
})
