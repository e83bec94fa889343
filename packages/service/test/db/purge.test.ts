/**
 * The purge job on a real database: what it deletes and keeps, in batches, shared by two
 * replicas, on its schedule (mock timers), and stopping between batches on close.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, beforeEach, describe, it, mock } from 'node:test'
import pg from 'pg'
import { insertRefreshToken } from '../../src/db/accounts/sessions.js'
import { purgeTargets } from '../../src/db/purge.js'
import { createDatabasePool } from '../../src/db/pool.js'
import { PurgeJob } from '../../src/accounts/purge-job.js'
import { newRefreshToken } from '../../src/accounts/tokens.js'
import { createTestDatabase, watchQueries, type TestDatabase } from '../helpers/database.js'
import { capturingLogger } from '../helpers/service.js'
import { insertSession } from '../helpers/sessions.js'
import { waitFor } from '../helpers/wait.js'

const hour = 3_600_000

async function newUser (db: pg.Pool): Promise<string> {
  const { rows } = await db.query<{ id: string }>("INSERT INTO users (email, password_hash) VALUES ($1, 'x') RETURNING id", [`${randomUUID()}@example.com`])
  return rows[0]?.id ?? ''
}

/** A session with one token of each kind given; returns its id. */
async function session (db: pg.Pool, userId: string, tokens: Array<'live' | 'expired' | 'revoked' | 'rotated' | 'rotated-expired'>, state: { revoked?: boolean, ended?: boolean } = {}): Promise<string> {
  const id = randomUUID()
  await insertSession(db, { id, userId, expiresAt: new Date(Date.now() + (state.ended === true ? -hour : hour)), userAgent: null, address: null })
  if (state.revoked === true) await db.query('UPDATE sessions SET revoked_at = now() WHERE id = $1', [id])
  for (const kind of tokens) {
    const expired = kind === 'expired' || kind === 'rotated-expired'
    const { tokenHash } = newRefreshToken()
    await insertRefreshToken(db, { tokenHash, familyId: id, userId, expiresAt: new Date(Date.now() + (expired ? -hour : hour)) })
    if (kind === 'revoked') await db.query('UPDATE refresh_tokens SET revoked_at = now() WHERE token_hash = $1', [tokenHash])
    if (kind.startsWith('rotated')) await db.query('UPDATE refresh_tokens SET rotated_at = now() WHERE token_hash = $1', [tokenHash])
  }
  return id
}

async function count (db: pg.Pool, table: 'sessions' | 'refresh_tokens'): Promise<number> {
  return (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]?.n ?? 0
}

function job (db: pg.Pool, batchSize: number, intervalMs = 3_600_000): PurgeJob {
  return new PurgeJob({ db, targets: purgeTargets, intervalMs, batchSize, log: capturingLogger('silent').logger })
}

describe('the purge job', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })
  beforeEach(async () => { await db.pool.query('TRUNCATE users, mail_outbox, mail_requests, login_failures, passkey_challenges CASCADE') })

  it('deletes expired, rotated-and-expired and revoked tokens, ended sessions, finished mail, expired devices and counts past their window; keeps what can still be used', async () => {
    const userId = await newUser(db.pool)
    const live = await session(db.pool, userId, ['rotated', 'live', 'expired', 'revoked', 'rotated-expired'])
    const revoked = await session(db.pool, userId, ['live'], { revoked: true })
    const pastEnd = await session(db.pool, userId, ['live'], { ended: true })
    const idle = await session(db.pool, userId, ['expired'])
    // Reset and verification links: one live, one used, one expired.
    for (const [expiresInMs, used] of [[hour, false], [hour, true], [-hour, false]] as const) {
      await db.pool.query("INSERT INTO account_tokens (token_hash, purpose, user_id, expires_at, used_at) VALUES ($1, 'password_reset', $2, $3, $4)",
        [newRefreshToken().tokenHash, userId, new Date(Date.now() + expiresInMs), used ? new Date() : null])
    }
    // Mails: pending, sent just now, sent 8 days ago; mail-request counts of a window that ended 8 days ago, and a current one.
    await db.pool.query(`INSERT INTO mail_outbox (kind, recipient, subject, status, finished_at) VALUES
      ('test', 'a@example.com', 'pending', 'pending', NULL), ('test', 'a@example.com', 'recent', 'sent', now()),
      ('test', 'a@example.com', 'old', 'sent', now() - interval '8 days')`)
    await db.pool.query(`INSERT INTO mail_requests (scope, key, requests, window_started_at) VALUES
      ('account', 'old@example.com', 1, now() - interval '8 days'), ('mailbox', 'old@example.com', 1, now() - interval '8 days'), ('account', 'new@example.com', 1, now())`)
    // Failed logins: a week and more after the last failure (any window and wait over), and lately (a window begun 8 days ago, renewed).
    await db.pool.query(`INSERT INTO login_failures (scope, key, failures, window_started_at, last_failure_at) VALUES
      ('account', 'typed-once@example.com', 1, now() - interval '9 days', now() - interval '8 days'),
      ('address', '192.0.2.1', 3, now() - interval '8 days', now() - interval '8 days'),
      ('account', 'lately@example.com', 2, now() - interval '1 hour', now())`)
    // An old row with a check under way (its lease runs out in a minute) is live.
    await db.pool.query(`INSERT INTO login_failures (scope, key, failures, window_started_at, last_failure_at, checks) VALUES
      ('account', 'checked-now@example.com', 0, now() - interval '9 days', now() - interval '8 days', ARRAY[now() + interval '1 minute'])`)
    // Known devices: one past its lifetime, one live; registration counts of a window that ended 8 days ago, and a current one.
    await db.pool.query('INSERT INTO devices (token_hash, user_id, expires_at) VALUES ($1, $3, now() - interval \'1 second\'), ($2, $3, now() + interval \'1 day\')',
      [newRefreshToken().tokenHash, newRefreshToken().tokenHash, userId])
    await db.pool.query(`INSERT INTO registration_requests (scope, key, requests, window_started_at) VALUES
      ('client', '192.0.2.1', 3, now() - interval '8 days'), ('account', 'new@example.com', 1, now())`)
    // Second-step challenges of sign-ins: one past its end, one live.
    await db.pool.query("INSERT INTO login_challenges (token_hash, user_id, purpose, amr, expires_at) VALUES ($1, $3, 'second_factor', '{pwd}', now() - interval '1 second'), ($2, $3, 'second_factor', '{pwd}', now() + interval '5 minutes')",
      [newRefreshToken().tokenHash, newRefreshToken().tokenHash, userId])
    // Passkey challenges: one past its expiry (never answered), one live.
    await db.pool.query(`INSERT INTO passkey_challenges (challenge_hash, purpose, expires_at) VALUES
      ($1, 'authenticate', now() - interval '1 second'), ($2, 'authenticate', now() + interval '5 minutes')`, [newRefreshToken().tokenHash, newRefreshToken().tokenHash])
    // The OpenID Connect provider's rows: one expired, one live, one kept until destroyed.
    await db.pool.query(`INSERT INTO oidc_payloads (model, id, payload, expires_at) VALUES
      ('AuthorizationCode', 'expired', '{}', now() - interval '1 second'), ('AuthorizationCode', 'live', '{}', now() + interval '1 minute'), ('Grant', 'kept', '{}', NULL)`)
    const purge = job(db.pool, 1000)
    const counts = await purge.runOnce()
    await purge.close()
    // Tokens: expired, revoked, rotated-expired, and the idle session's; then the three ended sessions (their live tokens go with them).
    assert.deepEqual(counts, { refresh_tokens: 4, sessions: 3, account_tokens: 2, mail_outbox: 1, mail_requests: 2, login_failures: 2, devices: 1, login_challenges: 1, registration_requests: 1, passkey_challenges: 1, oidc_payloads: 1 })
    const { rows: oidcRows } = await db.pool.query<{ id: string }>('SELECT id FROM oidc_payloads ORDER BY id')
    assert.deepEqual(oidcRows.map((row) => row.id), ['kept', 'live'])
    const { rows: challenges } = await db.pool.query<{ live: boolean }>('SELECT expires_at > now() AS live FROM login_challenges')
    assert.deepEqual(challenges.map((row) => row.live), [true])
    const { rows: links } = await db.pool.query<{ live: boolean }>('SELECT used_at IS NULL AND expires_at > now() AS live FROM account_tokens')
    assert.deepEqual(links.map((row) => row.live), [true])
    const { rows: mails } = await db.pool.query<{ subject: string }>('SELECT subject FROM mail_outbox ORDER BY id')
    assert.deepEqual(mails.map((row) => row.subject), ['pending', 'recent'])
    const { rows: requests } = await db.pool.query<{ key: string }>('SELECT key FROM mail_requests')
    assert.deepEqual(requests.map((row) => row.key), ['new@example.com'])
    const { rows: failures } = await db.pool.query<{ key: string }>('SELECT key FROM login_failures ORDER BY key')
    assert.deepEqual(failures.map((row) => row.key), ['checked-now@example.com', 'lately@example.com'])
    const { rows: devices } = await db.pool.query<{ live: boolean }>('SELECT expires_at > now() AS live FROM devices')
    assert.deepEqual(devices.map((row) => row.live), [true])
    const { rows: registrations } = await db.pool.query<{ key: string }>('SELECT key FROM registration_requests')
    assert.deepEqual(registrations.map((row) => row.key), ['new@example.com'])
    const { rows: sessions } = await db.pool.query<{ id: string }>('SELECT id FROM sessions')
    assert.deepEqual(sessions.map((row) => row.id), [live])
    const { rows: tokens } = await db.pool.query<{ rotated: boolean }>('SELECT rotated_at IS NOT NULL AS rotated FROM refresh_tokens ORDER BY rotated')
    assert.deepEqual(tokens.map((row) => row.rotated), [false, true], 'the live token and the rotated one (kept until it expires, to detect its reuse)')
    assert.ok(![revoked, pastEnd, idle].includes(sessions[0]?.id ?? ''))
  })

  it('deletes in batches of the given size, one statement each', async () => {
    const userId = await newUser(db.pool)
    for (let i = 0; i < 5; i++) await session(db.pool, userId, ['revoked', 'live'], { revoked: true })
    const watch = watchQueries(db.pool)
    try {
      // The revoked tokens; the live ones go with their revoked sessions.
      assert.deepEqual(await job(db.pool, 2).runOnce(), { refresh_tokens: 5, sessions: 5, account_tokens: 0, mail_outbox: 0, mail_requests: 0, login_failures: 0, devices: 0, login_challenges: 0, registration_requests: 0, passkey_challenges: 0, oidc_payloads: 0 })
      const deletes = watch.texts.filter((text) => text.includes('DELETE FROM'))
      // 5 tokens: 2 full batches and a short one; the same for 5 sessions; one empty batch for each other table.
      assert.equal(deletes.length, 3 + 3 + 9)
    } finally {
      watch.stop()
    }
    assert.equal(await count(db.pool, 'refresh_tokens'), 0)
  })

  it('two replicas running at once share the rows without waiting on each other or failing', async () => {
    const userId = await newUser(db.pool)
    for (let i = 0; i < 40; i++) await session(db.pool, userId, ['expired', 'revoked'])
    const other = createDatabasePool(db.url, 4)
    try {
      const runs = await Promise.all([job(db.pool, 5).runOnce(), job(other, 5).runOnce()])
      assert.equal(runs.reduce((sum, run) => sum + (run.refresh_tokens ?? 0), 0), 80)
      assert.equal(runs.reduce((sum, run) => sum + (run.sessions ?? 0), 0), 40)
      assert.equal(await count(db.pool, 'sessions'), 0)
    } finally {
      await other.end()
    }
  })

  it('stops between batches on close, and waits for the batch in flight', async () => {
    const userId = await newUser(db.pool)
    for (let i = 0; i < 6; i++) await session(db.pool, userId, ['expired'])
    const purge = job(db.pool, 1)
    const run = purge.runOnce()
    await purge.close()
    assert.deepEqual(await run, { refresh_tokens: 1 })
    assert.equal(await count(db.pool, 'refresh_tokens'), 5)
  })

  it('runs every interval from its start', async () => {
    const userId = await newUser(db.pool)
    await session(db.pool, userId, ['revoked'])
    // A pool of its own without idle timers: a pooled client's idle timer, set or cleared while
    // setTimeout is mocked, would escape the mock and hold the process open for 30 s after the tests.
    const unmockedPool = new pg.Pool({ connectionString: db.url, max: 2, idleTimeoutMillis: 0 })
    // end() resolves once its clients are let go, before their connections have closed: one still
    // closing when the database is dropped reports the termination here, not as an uncaught error.
    unmockedPool.on('error', () => {})
    mock.timers.enable({ apis: ['setTimeout'] })
    const purge = job(unmockedPool, 100, 60_000)
    try {
      purge.start()
      mock.timers.tick(59_999)
      assert.equal(await count(unmockedPool, 'refresh_tokens'), 1, 'not before the interval')
      mock.timers.tick(1)
      mock.timers.reset()
      await waitFor('the scheduled run to delete the revoked token', async () => await count(unmockedPool, 'refresh_tokens') === 0)
    } finally {
      mock.timers.reset()
      await purge.close()
      await unmockedPool.end()
    }
  })
})
