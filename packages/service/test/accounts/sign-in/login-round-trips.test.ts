/**
 * What a login asks of PostgreSQL, pinned: each statement is a round trip that wakes a backend,
 * which on a small machine takes a core from the event loop. Counted on the pool's clients, so
 * transactions (BEGIN, their statements, COMMIT) show as well as `pool.query` calls.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { watchStatements } from '../../helpers/net/round-trips.js'
import { registerUser, request, startTestService, uniqueEmail, type JsonResponse, type TestService } from '../../helpers/service.js'
import { waitFor } from '../../helpers/wait.js'

/** What each statement a login may send is, by its text; `other` fails every test that meets it. */
function kindOf (text: string): string {
  if (/FROM users WHERE email/.test(text) && /login_failures/.test(text)) return 'look up user and failures'
  if (/INSERT INTO sessions/.test(text) && /INSERT INTO refresh_tokens/.test(text) && /INSERT INTO devices/.test(text)) return 'open session with token and device'
  if (/^\s*INSERT INTO login_failures AS f \(scope, key, failures, window_started_at, last_failure_at, checks\)/.test(text)) return 'claim a check'
  if (/^\s*WITH before AS \(SELECT failures/.test(text) && /UPDATE login_failures/.test(text)) return 'forget account failures, give the claim back'
  if (/^DELETE FROM login_failures WHERE scope = 'device'/.test(text)) return 'forget device failures'
  if (/^\s*INSERT INTO login_failures/.test(text)) return 'count failure'
  return `other: ${text.trim().slice(0, 60)}`
}

describe('database round trips of a login', () => {
  let service: TestService
  before(async () => { service = await startTestService({ config: { purgeIntervalSeconds: 0 } }) })
  after(async () => { await service.close() })

  /** A login, and the statements (by kind, in the order sent) and checkouts it took. */
  const watchedLogin = async (email: string, password: string, headers: Record<string, string> = {}): Promise<{ response: JsonResponse, kinds: string[], checkouts: number }> => {
    // The registration's mail, and an owner's alert after a throttling, go out in the background,
    // on the same pool: let them finish first (a mail's last statement takes it out of `pending`).
    await Promise.all([...service.app.auth.backgroundJobs])
    await waitFor('the registration mail handled', async () => (await service.db.pool.query("SELECT count(*)::int AS n FROM mail_outbox WHERE status = 'pending'")).rows[0].n === 0)
    const watch = watchStatements(service.db.pool)
    try {
      const response = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password }, headers })
      return { response, kinds: watch.texts.map(kindOf), checkouts: watch.checkouts }
    } finally {
      watch.stop()
    }
  }

  it('a successful login from an unknown client: the lookup, the claim of a check, then its session and its outcome together; no BEGIN or COMMIT', async () => {
    // The claim is the bound on checks under way shared by every process (db/accounts/login-throttle.ts
    // claimCheck); the outcome gives it back. The session, its token and the device are one statement.
    const { email, password } = await registerUser(service)
    for (const [what, wrongFirst] of [['with no failures', false], ['after a failure', true]] as const) {
      if (wrongFirst) assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: 'not the password' } })).status, 401)
      const { response, kinds, checkouts } = await watchedLogin(email, password)
      assert.equal(response.status, 200, JSON.stringify(response.body))
      assert.deepEqual(kinds.slice(0, 2), ['look up user and failures', 'claim a check'], what)
      // Sent together: their order varies.
      assert.deepEqual(kinds.slice(2).sort(), ['forget account failures, give the claim back', 'open session with token and device'], what)
      assert.equal(checkouts, 4, what)
      // The one statement wrote both rows: the refresh token it answered works.
      const refreshed = await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: response.body.refreshToken } })
      assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body))
    }
  })

  it('a successful login from a known device claims nothing: the lookup and its session, and its own failures forgotten when it has some', async () => {
    const { email, password } = await registerUser(service)
    const device = (await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).headers.get('tollbooth-device') ?? ''
    const clean = await watchedLogin(email, password, { 'tollbooth-device': device })
    assert.equal(clean.response.status, 200, JSON.stringify(clean.response.body))
    assert.deepEqual(clean.kinds, ['look up user and failures', 'open session with token and device'], 'no failure of its own read: nothing to forget')
    assert.equal(clean.checkouts, 2)
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: 'not the password' }, headers: { 'tollbooth-device': device } })).status, 401)
    const afterFailure = await watchedLogin(email, password, { 'tollbooth-device': device })
    assert.equal(afterFailure.response.status, 200, JSON.stringify(afterFailure.response.body))
    assert.equal(afterFailure.kinds[0], 'look up user and failures')
    assert.deepEqual(afterFailure.kinds.slice(1).sort(), ['forget device failures', 'open session with token and device'])
    assert.equal(afterFailure.checkouts, 3)
  })

  it('a wrong password and an unknown email each send three: the lookup, the claim and the failure count (which gives the claim back)', async () => {
    const { email } = await registerUser(service)
    for (const tried of [email, uniqueEmail('nobody')]) {
      const { response, kinds, checkouts } = await watchedLogin(tried, 'not the password')
      assert.equal(response.status, 401, JSON.stringify(response.body))
      assert.deepEqual(kinds, ['look up user and failures', 'claim a check', 'count failure'])
      assert.equal(checkouts, 3)
    }
  })

  describe('the only process on its database (the embedded one it started): no lease', () => {
    let sole: TestService
    before(async () => { sole = await startTestService({ config: { purgeIntervalSeconds: 0 }, soleProcessOnDatabase: true }) })
    after(async () => { await sole.close() })

    it('a successful login sends the lookup and its session alone; one after a failure forgets it too; a wrong password sends the lookup and the count', async () => {
      const { email, password } = await registerUser(sole)
      const watched = async (tried: string): Promise<{ status: number, kinds: string[], checkouts: number }> => {
        await Promise.all([...sole.app.auth.backgroundJobs])
        await waitFor('the registration mail handled', async () => (await sole.db.pool.query("SELECT count(*)::int AS n FROM mail_outbox WHERE status = 'pending'")).rows[0].n === 0)
        const watch = watchStatements(sole.db.pool)
        try {
          const response = await request(sole, 'POST', '/api/v1/auth/login', { body: { email, password: tried } })
          return { status: response.status, kinds: watch.texts.map(kindOf), checkouts: watch.checkouts }
        } finally {
          watch.stop()
        }
      }
      const clean = await watched(password)
      assert.equal(clean.status, 200)
      assert.deepEqual(clean.kinds, ['look up user and failures', 'open session with token and device'])
      assert.equal(clean.checkouts, 2)
      const wrong = await watched('not the password')
      assert.equal(wrong.status, 401)
      assert.deepEqual(wrong.kinds, ['look up user and failures', 'count failure'])
      const afterFailure = await watched(password)
      assert.equal(afterFailure.status, 200)
      assert.equal(afterFailure.kinds[0], 'look up user and failures')
      assert.deepEqual(afterFailure.kinds.slice(1).sort(), ['forget account failures, give the claim back', 'open session with token and device'])
      const { rows } = await sole.db.pool.query<{ failures: number }>("SELECT failures FROM login_failures WHERE scope = 'account' AND key = $1", [email.toLowerCase()])
      assert.deepEqual(rows.map((row) => row.failures), [0], 'the failure is forgotten')
    })
  })

  it('a throttled login sends the lookup alone', async () => {
    const { email, password } = await registerUser(service)
    for (let i = 0; i < service.config.loginThrottleAccountFailures; i++) {
      assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: `wrong ${i}` } })).status, 401)
    }
    const { response, kinds, checkouts } = await watchedLogin(email, password)
    assert.equal(response.status, 429, JSON.stringify(response.body))
    assert.deepEqual(kinds, ['look up user and failures'])
    assert.equal(checkouts, 1)
  })

  it('the session and its token are written together or not at all, without a transaction around them', async () => {
    const { email, password, body } = await registerUser(service)
    const userId = body.user.id as string
    const sessionsOf = async (): Promise<number> => {
      const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions WHERE user_id = $1', [userId])
      return rows[0]?.n ?? -1
    }
    const before = await sessionsOf()
    // Every token insert fails, after its session's insert ran (nothing else here writes one meanwhile).
    await service.db.pool.query("CREATE FUNCTION refuse_token() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'token refused by the test'; END $$")
    await service.db.pool.query('CREATE TRIGGER refuse_token BEFORE INSERT ON refresh_tokens FOR EACH ROW EXECUTE FUNCTION refuse_token()')
    try {
      const refused = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
      assert.equal(refused.status, 500, JSON.stringify(refused.body))
      assert.equal(await sessionsOf(), before, 'no session without its token')
    } finally {
      await service.db.pool.query('DROP TRIGGER refuse_token ON refresh_tokens')
      await service.db.pool.query('DROP FUNCTION refuse_token()')
    }
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).status, 200)
    assert.equal(await sessionsOf(), before + 1)
  })

  it('a login and DELETE /me queued on the user row: the login\'s one statement keeps the users-first order, both answer cleanly', async () => {
    const { email, password, body } = await registerUser(service)
    const userId = body.user.id as string
    const waitingOnLocks = async (): Promise<number> => {
      const { rows } = await service.db.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
      return rows[0]?.n ?? 0
    }
    // Holds the user row as an account deletion does, so the login's statement queues on it, then the deletion behind it.
    const holder = new pg.Client({ connectionString: service.db.url })
    await holder.connect()
    let login: Promise<JsonResponse> | undefined
    let deletion: Promise<JsonResponse> | undefined
    try {
      await holder.query('BEGIN')
      await holder.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [userId])
      login = request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
      await waitFor('the login waiting on the user row', async () => await waitingOnLocks() >= 1)
      deletion = request(service, 'DELETE', '/api/v1/me', { token: body.accessToken as string, body: { password } })
      await waitFor('the deletion waiting too', async () => await waitingOnLocks() >= 2)
    } finally {
      await holder.query('COMMIT')
      await holder.end()
    }
    const [loggedIn, deleted] = await Promise.all([login, deletion])
    assert.equal(loggedIn?.status, 200, JSON.stringify(loggedIn?.body))
    assert.equal(deleted?.status, 204, JSON.stringify(deleted?.body))
    const { rows } = await service.db.pool.query<{ n: number }>(
      'SELECT (SELECT count(*) FROM sessions WHERE user_id = $1)::int + (SELECT count(*) FROM refresh_tokens WHERE user_id = $1)::int AS n', [userId])
    assert.equal(rows[0]?.n, 0, 'the session the login opened went with the account')
  })

  it('a login whose account is deleted between its lookup and its session: 401, as for an unknown email, not 500', async () => {
    const { email, password, body } = await registerUser(service)
    const userId = body.user.id as string
    // A deletion in progress: the login's lookup still sees the user (the deletion has not
    // committed), its session insert then waits on the user row, and finds it gone.
    const deleter = new pg.Client({ connectionString: service.db.url })
    await deleter.connect()
    let login: Promise<JsonResponse> | undefined
    try {
      await deleter.query('BEGIN')
      await deleter.query('DELETE FROM refresh_tokens WHERE user_id = $1', [userId])
      await deleter.query('DELETE FROM sessions WHERE user_id = $1', [userId])
      await deleter.query('DELETE FROM users WHERE id = $1', [userId])
      login = request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
      await waitFor('the login waiting on the deleted user row', async () => {
        const { rows } = await service.db.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
        return (rows[0]?.n ?? 0) >= 1
      })
    } finally {
      await deleter.query('COMMIT')
      await deleter.end()
    }
    const answer = await login
    assert.equal(answer?.status, 401, JSON.stringify(answer?.body))
    assert.equal(answer?.body.error.code, 'AUTH_INVALID_CREDENTIALS')
    const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions WHERE user_id = $1', [userId])
    assert.equal(rows[0]?.n, 0, 'no session of a deleted account')
  })
})
