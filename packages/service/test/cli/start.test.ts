import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import pg from 'pg'
import { runningEmbeddedPostgresUrl, scratchClusterDir } from '../../src/db/embedded/embedded.js'
import { packageRoot } from '../../src/paths.js'
import { startCli, stopCli, type StartedCli } from '../helpers/cli.js'
import { listeningDescriptors } from '../helpers/processes.js'
import { createTestDatabase } from '../helpers/database.js'
import { registerUser, request, serveEnv, testAccountEnv, testJwtSecret, testKeyEncryptionKey } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

const bin = path.join(packageRoot, 'bin', 'tollbooth.js')

async function startEmbeddedCli (dataDir: string): Promise<StartedCli & { pgPort: number }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TOLLBOOTH_DATA_DIR: dataDir,
    PORT: '0',
    TOLLBOOTH_LOG_LEVEL: 'info',
    TOLLBOOTH_ARGON2_MEMORY_KIB: '1024',
    TOLLBOOTH_ARGON2_TIME_COST: '1',
    // The drain on SIGTERM has a test of its own (below); here it would only add 5 s to each stop.
    TOLLBOOTH_SHUTDOWN_DRAIN_MS: '0',
    ...testAccountEnv,
  }
  delete env.DATABASE_URL
  const started = await startCli(env)
  const pg = started.lines().find((line) => line.msg === 'embedded PostgreSQL started')
  return { ...started, pgPort: Number(pg?.port ?? 0) }
}

async function portIsClosed (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => { resolve(true) })
  })
}

describe('`tollbooth` with no DATABASE_URL (what `npm start` runs)', () => {
  const dataDir = path.dirname(scratchClusterDir('cli'))
  after(() => { fs.rmSync(dataDir, { recursive: true, force: true }) })

  it('starts an embedded PostgreSQL, serves the API, stops cleanly on SIGTERM and keeps the data for the next start', async () => {
    const first = await startEmbeddedCli(dataDir)
    const account = { email: 'persisted@example.com', password: 'persisted password' }
    let accessToken: unknown
    try {
      assert.ok(first.pgPort > 0)
      const registered = await request({ url: first.url }, 'POST', '/api/v1/auth/register', { body: account })
      assert.equal(registered.status, 201, JSON.stringify(registered.body))
      assert.match(first.output(), /"cpuBudget":\{"cpus":\d+/)
      // TOLLBOOTH_ACCEPTORS (16): the socket is listened on through 16 descriptors (src/process/acceptors.ts).
      assert.equal(listeningDescriptors(first.pid, Number(new URL(first.url).port)), 16)
      assert.ok(!first.output().includes(account.password), 'the password is never logged')
      assert.ok(!first.output().includes(registered.body.refreshToken), 'tokens are never logged')
      accessToken = registered.body.accessToken
      assert.equal(await stopCli(first), 0)
    } finally {
      // A failed check above must not leave the service running: the test file would never end.
      await stopCli(first)
    }
    assert.ok(await portIsClosed(first.pgPort), 'the embedded PostgreSQL stopped with the service')
    assert.ok(fs.existsSync(path.join(dataDir, 'pg', 'PG_VERSION')))
    // The service's data is durable: PostgreSQL ran with fsync on (the test suite's own server does not: nonDurable).
    const options = fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.opts'), 'utf8')
    assert.match(options, /"fsync=on"/)
    assert.doesNotMatch(options, /synchronous_commit|full_page_writes/)
    const secret = fs.readFileSync(path.join(dataDir, 'key-encryption-key'), 'utf8')

    const second = await startEmbeddedCli(dataDir)
    try {
      const login = await request({ url: second.url }, 'POST', '/api/v1/auth/login', { body: account })
      assert.equal(login.status, 200)
      // The only process on the database it started: its password checks are counted in it, with no lease in PostgreSQL (a lease's claim would leave the account's row).
      const database = new pg.Client({ connectionString: runningEmbeddedPostgresUrl(path.join(dataDir, 'pg')) })
      await database.connect()
      try {
        assert.deepEqual((await database.query('SELECT scope, key FROM login_failures')).rows, [], 'a successful login wrote nothing to the throttle\'s table')
      } finally {
        await database.end()
      }
      // The access token from the first run still verifies: the key was kept.
      const me = await request({ url: second.url }, 'GET', '/api/v1/me', { token: accessToken as string })
      assert.equal(me.status, 200)
      assert.equal(fs.readFileSync(path.join(dataDir, 'key-encryption-key'), 'utf8'), secret)
    } finally {
      assert.equal(await stopCli(second), 0)
    }
  })

  it('stops cleanly on a SIGTERM sent while it starts: the signal waits for the start, then the embedded PostgreSQL stops with it', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, TOLLBOOTH_DATA_DIR: dataDir, PORT: '0', TOLLBOOTH_LOG_LEVEL: 'info', TOLLBOOTH_SHUTDOWN_DRAIN_MS: '0', ...testAccountEnv }
    delete env.DATABASE_URL
    const child = spawn(process.execPath, [bin], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => { resolve(code) }))
    // The database is up; migrations, keys and hash threads are still to come.
    await waitFor('the embedded PostgreSQL started', () => output.includes('"embedded PostgreSQL started"') || child.exitCode !== null, { timeoutMs: 120_000 })
    const pgPort = Number((/"port":(\d+)[^\n]*"embedded PostgreSQL started"/.exec(output) ?? [])[1])
    child.kill('SIGTERM')
    assert.equal(await exited, 0, output)
    assert.match(output, /"msg":"stopped"/)
    assert.ok(pgPort > 0 && await portIsClosed(pgPort), 'the embedded PostgreSQL stopped with the service')
  })

  it('refuses invalid configuration with a clear message and exit code 2', () => {
    const result = spawnSync(process.execPath, [bin, '--port', 'eighty'], { encoding: 'utf8', env: { ...process.env, TOLLBOOTH_HASH_ALGORITHM: 'md5' } })
    assert.equal(result.status, 2)
    assert.match(result.stderr, /invalid configuration: flag \(PORT \/ --port\) must be a whole number, got "eighty"/)
    const env = spawnSync(process.execPath, [bin], { encoding: 'utf8', env: { ...process.env, TOLLBOOTH_HASH_ALGORITHM: 'md5' } })
    assert.equal(env.status, 2)
    assert.match(env.stderr, /TOLLBOOTH_HASH_ALGORITHM .*must be one of argon2id, bcrypt, scrypt, got "md5"/)
  })

  it('refuses an impossible hash policy at start, before PostgreSQL starts', () => {
    const emptyDir = path.dirname(scratchClusterDir('cli-policy'))
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, TOLLBOOTH_DATA_DIR: emptyDir, TOLLBOOTH_SCRYPT_N: '1048576' }
      delete env.DATABASE_URL
      const result = spawnSync(process.execPath, [bin], { encoding: 'utf8', env })
      assert.equal(result.status, 2, result.stderr)
      assert.match(result.stderr, /invalid configuration: TOLLBOOTH_SCRYPT_N \/ --scrypt-n is 1048576/)
      assert.ok(!fs.existsSync(path.join(emptyDir, 'pg')), 'no database cluster was created')
    } finally {
      fs.rmSync(emptyDir, { recursive: true, force: true })
    }
  })

  it('prints every setting in --help', () => {
    const result = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8' })
    assert.equal(result.status, 0)
    for (const name of ['PORT', 'HOST', 'DATABASE_URL', 'TOLLBOOTH_DATA_DIR', 'TOLLBOOTH_HASH_ALGORITHM', 'TOLLBOOTH_BCRYPT_COST', 'TOLLBOOTH_ARGON2_MEMORY_KIB', 'TOLLBOOTH_ARGON2_TIME_COST', 'TOLLBOOTH_ARGON2_PARALLELISM', 'TOLLBOOTH_SCRYPT_N', 'TOLLBOOTH_SCRYPT_R', 'TOLLBOOTH_SCRYPT_P', 'TOLLBOOTH_HASH_THREADS', 'TOLLBOOTH_LOGIN_DEADLINE_MS']) {
      assert.ok(result.stdout.includes(name), `--help mentions ${name}`)
    }
  })
})

/** The status and error code of each HTTP/1.1 response in `raw`, in order. */
function parseStatuses (raw: string): Array<{ status: number, code: string | undefined }> {
  const responses: Array<{ status: number, code: string | undefined }> = []
  let rest = raw
  while (rest.startsWith('HTTP/1.1 ')) {
    const headEnd = rest.indexOf('\r\n\r\n')
    const head = rest.slice(0, headEnd)
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
    const body = rest.slice(headEnd + 4, headEnd + 4 + length)
    const parsed = body.length > 0 ? JSON.parse(body) as { error?: { code?: string } } : {}
    responses.push({ status: Number(head.split(' ')[1]), code: parsed.error?.code })
    rest = rest.slice(headEnd + 4 + length)
  }
  return responses
}

describe('`tollbooth` with DATABASE_URL writes nothing to its data folder', () => {
  it('serves logins signed with EdDSA and leaves TOLLBOOTH_DATA_DIR uncreated (the image runs read-only, as uid 1000)', async () => {
    const database = await createTestDatabase()
    const dataDir = path.join(path.dirname(scratchClusterDir('unwritten')), 'never-created')
    let cli: StartedCli | undefined
    try {
      cli = await startCli(serveEnv(database.url, { TOLLBOOTH_DATA_DIR: dataDir }))
      const registered = await registerUser({ url: cli.url })
      assert.equal(JSON.parse(Buffer.from(String(registered.body.accessToken).split('.')[0] ?? '', 'base64url').toString()).alg, 'EdDSA')
      assert.equal(fs.existsSync(dataDir), false, `${dataDir} was created`)
    } finally {
      if (cli !== undefined) await stopCli(cli)
      await database.drop()
      fs.rmSync(path.dirname(dataDir), { recursive: true, force: true })
    }
  })
})

describe('SIGTERM under load (`tollbooth` with DATABASE_URL)', () => {
  it('drains (readiness off, still serving), then finishes the requests in flight with their normal status, and loses no acknowledged write', async () => {
    const drainMs = 4000
    const database = await createTestDatabase()
    const admin = new pg.Client({ connectionString: database.url })
    await admin.connect()
    let cli: StartedCli | undefined
    const rawSockets: net.Socket[] = []
    try {
      cli = await startCli({
        ...process.env,
        DATABASE_URL: database.url,
        TOLLBOOTH_PUBLIC_URL: 'http://127.0.0.1',
        TOLLBOOTH_JWT_SECRET: testJwtSecret,
        TOLLBOOTH_KEY_ENCRYPTION_KEY: testKeyEncryptionKey,
        PORT: '0',
        TOLLBOOTH_LOG_LEVEL: 'info',
        TOLLBOOTH_ARGON2_MEMORY_KIB: '1024',
        TOLLBOOTH_ARGON2_TIME_COST: '1',
        TOLLBOOTH_HASH_THREADS: '2',
        TOLLBOOTH_DB_POOL_SIZE: '20',
        // Short enough for a test, long enough for the checks below on a loaded machine.
        TOLLBOOTH_SHUTDOWN_DRAIN_MS: String(drainMs),
        ...testAccountEnv,
      })
      const started = cli
      const service = { url: cli.url }
      const port = Number(new URL(cli.url).port)
      const token = (await registerUser(service)).body.accessToken as string

      // Writers: each registers and posts in turn, as fast as it is answered, until an answer is not 201.
      interface Write { kind: 'user' | 'post', key: string, status?: number, code?: string, failed?: string, done: boolean }
      const writes: Write[] = []
      const writer = async (id: number): Promise<void> => {
        for (let n = 0; ; n++) {
          const write: Write = { kind: n % 2 === 0 ? 'user' : 'post', key: `w${id}-${n}`, done: false }
          writes.push(write)
          try {
            const response = write.kind === 'user'
              ? await request(service, 'POST', '/api/v1/auth/register', { body: { email: `${write.key}@sigterm.example.com`, password: 'load password' } })
              : await request(service, 'POST', '/api/v1/posts', { token, body: { title: write.key, body: 'written under load' } })
            write.status = response.status
            write.code = response.body?.error?.code
          } catch (err) {
            write.failed = String((err as Error).cause ?? err)
          }
          write.done = true
          if (write.status !== 201) return
        }
      }
      const writers = Array.from({ length: 6 }, async (_, id) => await writer(id))
      const acknowledged = (): Write[] => writes.filter((write) => write.status === 201)
      await waitFor('30 acknowledged writes', () => acknowledged().length >= 30)

      // Hold every write inside PostgreSQL, so the requests in flight at SIGTERM stay in flight.
      await admin.query('BEGIN')
      await admin.query('LOCK TABLE users, posts IN SHARE MODE')
      const rawReceived = ['', '']
      for (const [i] of rawReceived.entries()) {
        const socket = net.connect(port, '127.0.0.1')
        socket.on('data', (chunk: Buffer) => { rawReceived[i] += chunk.toString('latin1') })
        socket.on('error', () => {})
        const body = JSON.stringify({ title: `raw-${i}`, body: 'in flight on a kept-alive connection' })
        socket.write(`POST /api/v1/posts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
        rawSockets.push(socket)
      }
      const lockWaiters = async (): Promise<number> => {
        await admin.query('SELECT pg_stat_clear_snapshot()') // a fresh view inside this transaction
        const { rows } = await admin.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tollbooth' AND wait_event_type = 'Lock'")
        return rows[0]?.n ?? 0
      }
      await waitFor('every writer and both raw posts to wait on the lock', async () =>
        writes.filter((write) => !write.done).length === 6 && await lockWaiters() === 6 + 2)
      const inFlight = writes.filter((write) => !write.done)

      const exited = new Promise<number | null>((resolve) => { started.child.once('exit', (code) => { resolve(code) }) })
      started.child.kill('SIGTERM')
      // The drain: /readyz answers 503 at once, while new connections and requests are still served.
      await waitFor('/readyz to answer 503', async () => (await request(service, 'GET', '/readyz')).status === 503)
      const duringDrain = await Promise.all([
        request(service, 'GET', '/healthz'),
        request(service, 'GET', '/api/v1/posts?limit=1'), // a read: the lock holds writes only
        request(service, 'GET', '/api/v1/me', { token }),
      ])
      const drainOver = (): Record<string, unknown> | undefined => started.lines().find((line) => String(line.msg).startsWith('drain over'))
      assert.equal(drainOver(), undefined, 'these were answered during the drain')
      for (const response of duringDrain) {
        assert.equal(response.status, 200, JSON.stringify(response.body))
        assert.equal(response.headers.get('connection'), 'close', 'keep-alive clients are sent to reconnect')
      }
      const readiness = await request(service, 'GET', '/readyz')
      assert.equal(readiness.status, 503)
      assert.equal(readiness.body.error.code, 'SHUTTING_DOWN')
      assert.ok(inFlight.every((write) => !write.done), 'the writes in flight are still waiting')

      await waitFor('the listener to close', async () => await portIsClosed(port))
      const closedSeenAt = Date.now()
      // The "drain over" line is written before the listener closes, but it comes over a pipe:
      // the refused connect can reach this process first.
      await waitFor('the "drain over" line', () => drainOver() !== undefined, { timeoutMs: 5000 }).catch(() => {})
      const draining = started.lines().find((line) => String(line.msg).startsWith('draining'))
      assert.ok(draining !== undefined && drainOver() !== undefined, started.output().slice(-2000))
      assert.ok(Number(drainOver()?.time) - Number(draining.time) >= drainMs - 5, 'the listener stayed open for the whole drain')
      assert.ok(closedSeenAt >= Number(draining.time) + drainMs - 5, `the port refused connections ${closedSeenAt - Number(draining.time)} ms into a ${drainMs} ms drain`)
      // A readiness probe on a connection still open (its post in flight): answered from the closing hook.
      const refusedBefore = started.lines().filter((line) => line.code === 'SHUTTING_DOWN').length
      rawSockets[0]?.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n')
      await waitFor('the readiness probe to be refused', () => started.lines().filter((line) => line.code === 'SHUTTING_DOWN').length > refusedBefore)
      assert.ok(inFlight.every((write) => !write.done), 'readiness flipped while the writes were still in flight')
      assert.deepEqual(rawReceived, ['', ''], 'and before their answers')
      assert.equal(started.child.exitCode, null)

      await admin.query('ROLLBACK') // the writes go through
      assert.equal(await exited, 0, started.output().slice(-2000))
      await Promise.all(writers)

      for (const write of inFlight) assert.equal(write.status, 201, `in flight at SIGTERM: ${JSON.stringify(write)}`)
      assert.deepEqual(parseStatuses(rawReceived[0] ?? ''), [{ status: 201, code: undefined }, { status: 503, code: 'SHUTTING_DOWN' }])
      assert.deepEqual(parseStatuses(rawReceived[1] ?? ''), [{ status: 201, code: undefined }])
      // After shutdown began, a new write is refused (503 SHUTTING_DOWN) or cannot connect: never a 500.
      for (const write of writes.filter((w) => w.status !== 201)) {
        assert.ok(write.failed !== undefined || (write.status === 503 && write.code === 'SHUTTING_DOWN'), JSON.stringify(write))
      }

      const users = await database.pool.query<{ email: string }>("SELECT email FROM users WHERE email LIKE '%@sigterm.example.com'")
      const posts = await database.pool.query<{ title: string }>('SELECT title FROM posts')
      const stored = new Set([...users.rows.map((row) => row.email), ...posts.rows.map((row) => row.title)])
      const acknowledgedKeys = acknowledged().map((write) => write.kind === 'user' ? `${write.key}@sigterm.example.com` : write.key)
      for (const key of [...acknowledgedKeys, 'raw-0', 'raw-1']) assert.ok(stored.has(key), `acknowledged write ${key} is in the database`)
      assert.ok(acknowledgedKeys.length >= 36, `${acknowledgedKeys.length} acknowledged writes`)
    } finally {
      for (const socket of rawSockets) socket.destroy()
      if (cli !== undefined && cli.child.exitCode === null) cli.child.kill('SIGKILL')
      await admin.end()
      await database.drop()
    }
  })
})
