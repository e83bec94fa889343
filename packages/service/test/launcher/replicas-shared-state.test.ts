/**
 * Three real `tollbooth serve` processes (the launcher API, as the lab and a user start them) on
 * one PostgreSQL, started together on an empty database: what one replica does, the others see.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startServe, type ServeProcess } from '../../src/launcher/index.js'
import { packageRoot } from '../../src/paths.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { waitFor } from '../helpers/wait.js'
import { request, serveEnv, uniqueEmail } from '../helpers/service.js'

const accountFailures = 3

describe('three replicas on one PostgreSQL share their state', () => {
  let db: TestDatabase
  let replicas: ServeProcess[] = []
  let a: ServeProcess
  let b: ServeProcess
  let c: ServeProcess

  before(async () => {
    db = await createTestDatabase({ migrate: false })
    const env = serveEnv(db.url, {
      TOLLBOOTH_HASH_THREADS: '1',
      TOLLBOOTH_LOGIN_THROTTLE_ACCOUNT_FAILURES: String(accountFailures),
      // Long enough that the test's next attempt always falls inside the wait.
      TOLLBOOTH_LOGIN_THROTTLE_BASE_DELAY_SECONDS: '120',
    })
    // Together, on an empty database: each runs the migrations at start.
    const starts = await Promise.allSettled([0, 1, 2].map(async () => await startServe({ env, tailLines: 400, startTimeoutMs: 90_000 })))
    replicas = starts.flatMap((start) => start.status === 'fulfilled' ? [start.value] : [])
    const failed = starts.find((start) => start.status === 'rejected')
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
    ;[a, b, c] = replicas as [ServeProcess, ServeProcess, ServeProcess]
  })
  after(async () => {
    await Promise.all(replicas.map(async (replica) => { await replica.stop() }))
    await db.drop()
  })

  it('three replicas starting together on an empty database: all start, the migrations ran once', async () => {
    assert.equal(new Set(replicas.map((replica) => replica.url)).size, 3)
    for (const replica of replicas) assert.equal((await request(replica, 'GET', '/readyz')).status, 200)
    const files = fs.readdirSync(path.join(packageRoot, 'src', 'db', 'migrations')).filter((file) => file.endsWith('.sql'))
    const { rows } = await db.pool.query<{ version: number, n: number }>('SELECT version, count(*)::int AS n FROM schema_migrations GROUP BY version ORDER BY version')
    assert.equal(rows.length, files.length, 'one row per migration file')
    assert.ok(rows.every((row) => row.n === 1), 'no migration recorded twice')
    // Exactly one replica applied them; the others found them done (under the advisory lock).
    const appliers = replicas.filter((replica) => replica.logTail().split('\n').some((line) => line.includes('"msg":"migrations applied"')))
    assert.equal(appliers.length, 1, 'one replica applied the migrations')
    const keys = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM signing_keys')
    assert.equal(keys.rows[0]?.n, 1, 'one signing key, created by one replica')
  })

  it('an access token signed by A (EdDSA, keys in PostgreSQL) verifies on B and C', async () => {
    const registered = await request(a, 'POST', '/api/v1/auth/register', { body: { email: uniqueEmail('jwt'), password: 'replica password' } })
    assert.equal(registered.status, 201)
    const token = registered.body.accessToken as string
    const header = JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString()) as { alg: string, kid?: string }
    assert.equal(header.alg, 'EdDSA')
    for (const replica of [a, b, c]) {
      const me = await request(replica, 'GET', '/api/v1/me', { token })
      assert.equal(me.status, 200, replica.url)
      assert.equal(me.body.id ?? me.body.user?.id, registered.body.user.id)
    }
  })

  it('a refresh token issued by A, refreshed on B, reused on C: 401 and the whole family revoked', async () => {
    const registered = await request(a, 'POST', '/api/v1/auth/register', { body: { email: uniqueEmail('refresh'), password: 'replica password' } })
    assert.equal(registered.status, 201)
    const first = registered.body.refreshToken as string
    const rotated = await request(b, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: first } })
    assert.equal(rotated.status, 200)
    const second = rotated.body.refreshToken as string
    assert.notEqual(second, first)
    assert.equal((await request(c, 'GET', '/api/v1/me', { token: rotated.body.accessToken })).status, 200, 'B\'s access token verifies on C')

    // Past the refresh grace window (within it, the same successor is given again).
    await db.pool.query("UPDATE refresh_tokens SET rotated_at = rotated_at - interval '1 minute' WHERE rotated_at IS NOT NULL")
    const reused = await request(c, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: first } })
    assert.equal(reused.status, 401)
    assert.equal(reused.body.error.code, 'AUTH_REFRESH_TOKEN_REUSED')
    // The reuse revoked the family: B's new token is refused everywhere, A included, and its access token too.
    for (const replica of [a, b]) {
      const refused = await request(replica, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: second } })
      assert.equal(refused.status, 401, replica.url)
      assert.equal(refused.body.error.code, 'AUTH_REFRESH_TOKEN_INVALID')
    }
    // C revoked it: refused there at once; A and B see it within their session-check cache time (1 s).
    assert.equal((await request(c, 'GET', '/api/v1/me', { token: rotated.body.accessToken })).body.error.code, 'AUTH_SESSION_ENDED')
    await waitFor('A to refuse the ended session\'s access token', async () => (await request(a, 'GET', '/api/v1/me', { token: rotated.body.accessToken })).status === 401)
  })

  it('login throttling counts are shared: failures spread over A, B and C reach the bound, the next login on any replica is 429', async () => {
    const account = { email: uniqueEmail('throttle'), password: 'the right password' }
    assert.equal((await request(a, 'POST', '/api/v1/auth/register', { body: account })).status, 201)
    const spread = [a, b, c]
    for (let i = 0; i < accountFailures; i++) {
      const replica = spread[i % spread.length] as ServeProcess
      const failed = await request(replica, 'POST', '/api/v1/auth/login', { body: { email: account.email, password: `wrong ${i}` } })
      assert.equal(failed.status, 401, `failure ${i + 1} on ${replica.url}: ${JSON.stringify(failed.body)}`)
    }
    // No replica saw more than one failure alone, yet each refuses: the count is in PostgreSQL.
    for (const replica of spread) {
      const refused = await request(replica, 'POST', '/api/v1/auth/login', { body: account })
      assert.equal(refused.status, 429, `${replica.url}: ${JSON.stringify(refused.body)}`)
      assert.equal(refused.body.error.code, 'TOO_MANY_ATTEMPTS')
      assert.ok(Number(refused.headers.get('retry-after')) > 0)
    }
  })
})
