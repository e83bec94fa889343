/**
 * `tollbooth users import` against a real PostgreSQL and a real service: fixtures made by each
 * source's own library (fixtures/make-fixtures.py) are imported, then every account signs in
 * through the API with its old password and leaves with the policy's hash; rejected lines are
 * reported by number and reason and skipped; a second run changes nothing; a dry run writes nothing.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { PassThrough } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runUsersCommand } from '../../../src/cli/users-command.js'
import { scratchClusterDir } from '../../../src/db/embedded/embedded.js'
import { startServe } from '../../../src/launcher/index.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/database.js'
import { cheapPolicy, embeddedServeEnv, request, serveEnv, startTestService, type TestService } from '../../helpers/service.js'
import { linkToken, logMailbox, type LogMailbox } from '../../helpers/smtp.js'

/** The fixtures sit beside the sources (test/), not in dist/. */
const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../test/accounts/import/fixtures')
const accountsFile = path.join(fixtures, 'accounts.jsonl')
const firebaseConfig = path.join(fixtures, 'firebase-hash-config.txt')
const passwords = JSON.parse(fs.readFileSync(path.join(fixtures, 'passwords.json'), 'utf8')) as Record<string, string>
/** Each account's email as the file spells it, by the normalised one: the login types it so. */
const typedEmails = new Map(fs.readFileSync(accountsFile, 'utf8').trim().split('\n').map((line) => {
  const { email } = JSON.parse(line) as { email: string }
  return [email.trim().toLowerCase(), email]
}))
const rejectedLines = fs.readFileSync(path.join(fixtures, 'rejected.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { line: string, code: string })

interface CommandRun { code: number, out: string, err: string }

async function usersCommand (argv: string[], env: NodeJS.ProcessEnv): Promise<CommandRun> {
  let out = ''
  let err = ''
  const errorStream = new PassThrough()
  errorStream.on('data', (chunk: Buffer) => { err += chunk.toString() })
  const code = await runUsersCommand(argv, { env, writeOut: (text) => { out += text }, writeError: (text) => { err += text }, errorStream })
  return { code, out, err }
}

async function count (db: TestDatabase, sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(sql, params)
  return rows[0]?.n ?? -1
}

async function storedHash (db: TestDatabase, email: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE email = $1', [email])
  return rows[0]?.password_hash
}

const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-import-'))
after(() => { fs.rmSync(tempDir, { recursive: true, force: true }) })

describe('users import: accounts from other systems sign in with their old passwords', () => {
  let db: TestDatabase
  let env: NodeJS.ProcessEnv
  let service: TestService
  let mailbox: LogMailbox
  let firstRun: CommandRun

  before(async () => {
    db = await createTestDatabase()
    env = serveEnv(db.url)
    firstRun = await usersCommand(['import', accountsFile, '--firebase-params', firebaseConfig, '--json'], env)
    mailbox = logMailbox()
    // Immediate registration, links in the debug log, the outbox polled: the imported reset mail goes out.
    service = await startTestService({ db, policy: cheapPolicy, config: { mailLogLinks: true, mailPollIntervalMs: 200 }, logger: mailbox.logger })
  })
  after(async () => { await service?.close() })

  it('imports every fixture line', () => {
    assert.equal(firstRun.code, 0, firstRun.err)
    const summary = JSON.parse(firstRun.out) as { imported: number, rejected: number, alreadyPresent: number, resetMails: number, importedByFormat: Record<string, number> }
    assert.equal(summary.rejected, 0, firstRun.err)
    assert.equal(summary.alreadyPresent, 0)
    assert.equal(summary.imported, Object.keys(passwords).length + 1, 'every account with a password, and the one without')
    assert.equal(summary.resetMails, 1)
    assert.deepEqual(summary.importedByFormat, {
      bcrypt: 5, argon2id: 2, argon2i: 1, scrypt: 3, 'pbkdf2-sha256': 3, 'pbkdf2-sha512': 1, 'firebase-scrypt': 1, none: 1,
    })
  })

  it('keeps names and verified addresses, and normalises the email as registration does', async () => {
    const { rows } = await db.pool.query<{ email: string, name: string | null, verified: boolean }>('SELECT email, name, email_verified_at IS NOT NULL AS verified FROM users ORDER BY email')
    const byEmail = new Map(rows.map((row) => [row.email, row]))
    assert.equal(byEmail.get('bcrypt-2b@example.com')?.name, 'Bea Crypt')
    assert.equal(byEmail.get('argon2id@example.com')?.verified, true)
    assert.equal(byEmail.get('firebase@example.com')?.verified, true)
    assert.equal(byEmail.get('bcrypt-2a@example.com')?.verified, false)
    // The next test signs in with the address as the file spells it, as a registered one would.
    assert.ok(byEmail.has('mixed.case@example.com'), 'trimmed and lower-cased')
  })

  it('each fixture refuses a wrong password, signs in with its own, and then holds the policy\'s hash', async () => {
    for (const [email, password] of Object.entries(passwords)) {
      const before = await storedHash(db, email)
      assert.ok(before !== undefined && !before.startsWith('$argon2id$v=19$m=1024,t=1,p=1$'), `${email} starts with its imported hash`)
      const typed = typedEmails.get(email) ?? email
      const wrong = await request(service, 'POST', '/api/v1/auth/login', { body: { email: typed, password: `${password}!` } })
      assert.equal(wrong.status, 401, `${email}: a wrong password`)
      assert.equal(await storedHash(db, email), before, `${email}: a failed login changes nothing`)
      const login = await request(service, 'POST', '/api/v1/auth/login', { body: { email: typed, password } })
      assert.equal(login.status, 200, `${email}: ${JSON.stringify(login.body)}`)
      await Promise.allSettled([...service.app.auth.backgroundJobs])
      assert.match(await storedHash(db, email) ?? '', /^\$argon2id\$v=19\$m=1024,t=1,p=1\$/, `${email} re-hashed to the policy`)
      const again = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
      assert.equal(again.status, 200, `${email}: the password works with the new hash`)
    }
  })

  it('an account without a password signs in with none, and gets a reset link that sets one', async () => {
    const email = 'no-password@example.com'
    assert.equal(await storedHash(db, email), '!')
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: 'any password at all' } })).status, 401)
    const mail = await mailbox.waitForMail('the imported account\'s reset mail', (received) => received.to.includes(email))
    assert.equal(mail.subject, 'Choose a password for your account')
    const reset = await request(service, 'POST', '/api/v1/auth/password/reset', { body: { token: linkToken(mail, 'reset-password'), password: 'a password of my own' } })
    assert.equal(reset.status, 204, JSON.stringify(reset.body))
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: 'a password of my own' } })).status, 200)
  })

  it('a second run imports nothing new and changes nothing', async () => {
    const users = await count(db, 'SELECT count(*)::int AS n FROM users')
    const mails = await count(db, 'SELECT count(*)::int AS n FROM mail_outbox')
    const hashes = await db.pool.query('SELECT email, password_hash FROM users ORDER BY email')
    const reportFile = path.join(tempDir, 'second-run.jsonl')
    const run = await usersCommand(['import', accountsFile, '--firebase-params', firebaseConfig, '--json', '--report', reportFile], env)
    assert.equal(run.code, 0, run.err)
    const summary = JSON.parse(run.out) as { imported: number, alreadyPresent: number, resetMails: number }
    assert.equal(summary.imported, 0)
    assert.equal(summary.resetMails, 0)
    assert.equal(summary.alreadyPresent, Object.keys(passwords).length + 1)
    const report = fs.readFileSync(reportFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { line: number, outcome: string, email: string })
    assert.deepEqual(report.map((entry) => entry.outcome), report.map(() => 'already-present'))
    assert.deepEqual(report.map((entry) => entry.line), report.map((_, index) => index + 1), 'every line, by its number')
    assert.equal(await count(db, 'SELECT count(*)::int AS n FROM users'), users)
    assert.equal(await count(db, 'SELECT count(*)::int AS n FROM mail_outbox'), mails)
    assert.deepEqual((await db.pool.query('SELECT email, password_hash FROM users ORDER BY email')).rows, hashes.rows)
  })

  it('reports each rejected line by number and reason, skips it, and imports the lines around it', async () => {
    const good = { email: 'between-the-bad@example.com', passwordHash: '$2b$04$64GuFPvTi4jpWuTc/Yc4wO2HKGXDm61DAqjAQG0R.Lnrl./lalyr2' }
    const lines = [JSON.stringify(good), ...rejectedLines.map((entry) => entry.line), '', JSON.stringify({ ...good, email: 'after-the-bad@example.com' })]
    const file = path.join(tempDir, 'rejected.jsonl')
    fs.writeFileSync(file, lines.join('\n'))
    const reportFile = path.join(tempDir, 'rejected-report.jsonl')
    const run = await usersCommand(['import', file, '--json', '--report', reportFile, '--batch-size', '3'], env)
    assert.equal(run.code, 1, 'some lines were rejected')
    const summary = JSON.parse(run.out) as { imported: number, rejected: number, lines: number }
    assert.equal(summary.imported, 2)
    assert.equal(summary.rejected, rejectedLines.length)
    const report = fs.readFileSync(reportFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { line: number, outcome: string, code: string, reason: string })
    assert.deepEqual(report.map((entry) => [entry.line, entry.code]), rejectedLines.map((entry, index) => [index + 2, entry.code]))
    for (const entry of report) {
      assert.equal(entry.outcome, 'rejected')
      assert.ok(entry.reason.length > 0)
      assert.ok(!entry.reason.includes('$2b$04$'), 'no reason repeats a hash')
    }
    assert.equal(await count(db, "SELECT count(*)::int AS n FROM users WHERE email IN ('between-the-bad@example.com', 'after-the-bad@example.com')"), 2)
    for (const entry of rejectedLines) {
      const email = (() => { try { return (JSON.parse(entry.line) as { email?: unknown }).email } catch { return undefined } })()
      if (typeof email === 'string') assert.equal(await storedHash(db, email.trim().toLowerCase()), undefined, `${email} was not imported`)
    }
  })

  it('without --report, the rejected lines are written to standard error as text', async () => {
    const file = path.join(tempDir, 'one-bad.jsonl')
    fs.writeFileSync(file, '{"email": "x@example.com", "passwordHash": "{SSHA}abc"}\n')
    const run = await usersCommand(['import', file], env)
    assert.equal(run.code, 1)
    assert.match(run.err, /^line 1: unknown_hash_format: /m)
    assert.match(run.out, /rejected: 1 \(unknown_hash_format 1\)/)
  })
})

describe('users import accepts exactly the addresses registration accepts', () => {
  let service: TestService
  before(async () => { service = await startTestService() })
  after(async () => { await service?.close() })

  it('agrees with POST /auth/register on each address', async () => {
    const addresses = [
      'plain@example.com', ' Spaced@Example.com ', 'dots.in.local@example.co.uk', 'plus+tag@example.com', "o'neil@example.com",
      'no-at-sign.example.com', 'two@@example.com', 'trailing.dot.@example.com', 'a@b', 'x@example', 'ünïcode@example.com',
      'under_score@sub-domain.example.com', 'a@-bad.example.com', `${'a'.repeat(245)}@example.com`, 'a b@example.com', '@example.com',
    ]
    const lines = addresses.map((email) => JSON.stringify({ email }))
    const file = path.join(tempDir, 'addresses.jsonl')
    fs.writeFileSync(file, lines.join('\n'))
    const reportFile = path.join(tempDir, 'addresses-report.jsonl')
    await usersCommand(['import', file, '--dry-run', '--report', reportFile, '--json'], serveEnv(service.db.url))
    const refusedLines = new Set(fs.readFileSync(reportFile, 'utf8').trim().split('\n').filter((line) => line !== '').map((line) => (JSON.parse(line) as { line: number, code: string }).line))
    for (const [index, email] of addresses.entries()) {
      const registered = await request(service, 'POST', '/api/v1/auth/register', { body: { email, password: 'a long enough password' } })
      assert.ok(registered.status === 201 || registered.status === 400, `${email}: ${registered.status}`)
      assert.equal(!refusedLines.has(index + 1), registered.status === 201, `${JSON.stringify(email)}: registration answered ${registered.status}`)
    }
  })
})

describe('users import --dry-run', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })

  it('checks every line and writes nothing', async () => {
    const env = serveEnv(db.url)
    const run = await usersCommand(['import', accountsFile, '--firebase-params', firebaseConfig, '--dry-run', '--json'], env)
    assert.equal(run.code, 0, run.err)
    const summary = JSON.parse(run.out) as { dryRun: boolean, imported: number, resetMails: number, checkedDatabase: boolean }
    assert.equal(summary.dryRun, true)
    assert.equal(summary.checkedDatabase, true)
    assert.equal(summary.imported, Object.keys(passwords).length + 1)
    assert.equal(summary.resetMails, 1)
    assert.equal(await count(db, 'SELECT count(*)::int AS n FROM users'), 0)
    assert.equal(await count(db, 'SELECT count(*)::int AS n FROM mail_outbox'), 0)
    assert.equal(await count(db, 'SELECT count(*)::int AS n FROM account_tokens'), 0)
  })

  it('finds the emails already present, as the real run would', async () => {
    const env = serveEnv(db.url)
    await db.pool.query("INSERT INTO users (email, name, password_hash) VALUES ('argon2id@example.com', NULL, '!')")
    const run = await usersCommand(['import', accountsFile, '--firebase-params', firebaseConfig, '--dry-run', '--json'], env)
    const summary = JSON.parse(run.out) as { imported: number, alreadyPresent: number }
    assert.equal(summary.alreadyPresent, 1)
    assert.equal(summary.imported, Object.keys(passwords).length)
    assert.equal(await count(db, 'SELECT count(*)::int AS n FROM users'), 1)
  })

  it('needs none of the signing key\'s settings, and writes argon2 hashes with padded base64 canonically', async () => {
    const env = serveEnv(db.url)
    delete env.TOLLBOOTH_KEY_ENCRYPTION_KEY
    const file = path.join(tempDir, 'padded.jsonl')
    fs.writeFileSync(file, `${JSON.stringify({ email: 'padded@example.com', passwordHash: '$argon2id$v=19$m=2048,t=1,p=1$a1gRSsimsgurgKGpLby6lw==$GedjUq20/+Q9hLiglfQOLBumut6DbVrHvduKJY6/PwA=' })}\n`)
    const run = await usersCommand(['import', file, '--json'], env)
    assert.equal(run.code, 0, run.err)
    assert.equal(await storedHash(db, 'padded@example.com'), '$argon2id$v=19$m=2048,t=1,p=1$a1gRSsimsgurgKGpLby6lw$GedjUq20/+Q9hLiglfQOLBumut6DbVrHvduKJY6/PwA')
  })

  it('refuses Firebase parameters outside Firebase\'s ranges before reading a line', async () => {
    const run = await usersCommand(['import', accountsFile, '--dry-run', '--firebase-signer-key', 'jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==', '--firebase-salt-separator', 'Bw==', '--firebase-rounds', '8', '--firebase-mem-cost', '20'], serveEnv(db.url))
    assert.equal(run.code, 2)
    assert.match(run.err, /mem_cost is 20, outside 1\.\.14/)
  })
})

describe('users import beside a service on the embedded database (no DATABASE_URL)', () => {
  const dataDir = path.dirname(scratchClusterDir('users-import'))
  const env = embeddedServeEnv(dataDir)
  after(() => { fs.rmSync(dataDir, { recursive: true, force: true }) })

  it('with no service running: a dry run checks the lines alone, an import says what it needs', async () => {
    const dry = await usersCommand(['import', accountsFile, '--firebase-params', firebaseConfig, '--dry-run', '--json'], env)
    assert.equal(dry.code, 0, dry.err)
    const summary = JSON.parse(dry.out) as { checkedDatabase: boolean, imported: number }
    assert.equal(summary.checkedDatabase, false)
    assert.equal(summary.imported, Object.keys(passwords).length + 1)
    const run = await usersCommand(['import', accountsFile], env)
    assert.equal(run.code, 1)
    assert.match(run.err, /no DATABASE_URL, and no embedded PostgreSQL is running from .* \(TOLLBOOTH_DATA_DIR\)/)
  })

  it('imports into the running service\'s database, and the accounts sign in through it', async () => {
    const service = await startServe({ env })
    try {
      const run = await usersCommand(['import', accountsFile, '--firebase-params', firebaseConfig, '--json'], env)
      assert.equal(run.code, 0, run.err)
      assert.equal((JSON.parse(run.out) as { imported: number }).imported, Object.keys(passwords).length + 1)
      for (const email of ['bcrypt-2b@example.com', 'django-pbkdf2@example.com', 'firebase@example.com']) {
        const login = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: passwords[email] } })
        assert.equal(login.status, 200, `${email}: ${JSON.stringify(login.body)}`)
      }
    } finally {
      await service.stop()
    }
  })
})
