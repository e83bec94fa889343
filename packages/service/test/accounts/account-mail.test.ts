/**
 * Email for real: verification, password reset and the registration modes through a real SMTP
 * server (smtp-server on 127.0.0.1), and the outbox's dispatcher on its own: SMTP down then up,
 * giving up, the log without SMTP, two replicas, a clean close.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { after, before, describe, it } from 'node:test'
import { createLogger } from '../../src/http/logger.js'
import { MailDispatcher } from '../../src/mail/dispatcher.js'
import { claimForLog, enqueueMail } from '../../src/db/mail-outbox.js'
import { smtpTransport } from '../../src/mail/transport.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { capturingLogger, registerUser, request, startTestService, uniqueEmail, type JsonResponse, type TestService } from '../helpers/service.js'
import { linkToken, startSmtpServer, type ReceivedMail, type TestSmtpServer } from '../helpers/smtp.js'
import { waitFor } from '../helpers/wait.js'

const publicUrl = 'https://app.example.com/account'
const sentTo = (email: string, subject: string) => (mail: ReceivedMail): boolean => mail.to.includes(email) && mail.subject === subject

/** Headers that may differ between two identical answers: the date, nothing else. */
function headersMinusDate (response: JsonResponse): Record<string, string> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => { if (name !== 'date') headers[name] = value })
  return headers
}

async function outboxCount (service: TestService, email: string, kind: string): Promise<number> {
  const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM mail_outbox WHERE recipient = $1 AND kind = $2', [email, kind])
  return rows[0]?.n ?? 0
}

describe('account mail through a real SMTP server', () => {
  let smtp: TestSmtpServer
  /** Immediate registration, verification not required. */
  let service: TestService
  /** The same database: enumeration-safe registration (so a verified address is required, and an unverified login looks like a wrong password). */
  let strict: TestService
  /** The same database: immediate registration, verified address required (403 EMAIL_NOT_VERIFIED). */
  let verifiedOnly: TestService

  before(async () => {
    smtp = await startSmtpServer()
    const mail = { smtpUrl: smtp.url, publicUrl, mailThrottleAccountRequests: 2, mailThrottleAddressRequests: 40, mailPollIntervalMs: 200 }
    service = await startTestService({ config: mail })
    strict = await startTestService({ db: service.db, config: { ...mail, registrationMode: 'enumeration-safe' } })
    verifiedOnly = await startTestService({ db: service.db, config: { ...mail, requireVerifiedEmail: true } })
  })
  after(async () => {
    await verifiedOnly?.close()
    await strict?.close()
    await service?.close()
    await smtp?.close()
  })

  it('registration mails a verification link (queued in its transaction); the link verifies the address, once', async () => {
    const { email, password, body } = await registerUser(service)
    assert.equal(body.user.emailVerified, false)
    const mail = await smtp.waitForMail('the verification mail', sentTo(email, 'Confirm your email address'))
    assert.ok(mail.text.includes(`${publicUrl}/verify-email?token=`), mail.text)
    const token = linkToken(mail, 'verify-email')
    assert.equal(token.length, 43, '32 random bytes, base64url')
    const { rows } = await service.db.pool.query('SELECT 1 FROM account_tokens WHERE token_hash = $1', [createHash('sha256').update(token).digest()])
    assert.equal(rows.length, 1, 'stored as its SHA-256')

    // A registration that fails (the address is taken) queues nothing: its transaction is rolled back.
    assert.equal((await request(service, 'POST', '/api/v1/auth/register', { body: { email, password } })).status, 409)
    assert.equal(await outboxCount(service, email, 'verify_email'), 1)

    assert.equal((await request(service, 'POST', '/api/v1/auth/verify-email', { body: { token } })).status, 204)
    const me = await request(service, 'GET', '/api/v1/me', { token: body.accessToken })
    assert.equal(me.body.emailVerified, true)
    const login = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
    assert.equal(login.body.user.emailVerified, true)
    const again = await request(service, 'POST', '/api/v1/auth/verify-email', { body: { token } })
    assert.equal(again.status, 401)
    assert.equal(again.body.error.code, 'ACCOUNT_TOKEN_INVALID')
  })

  it('password reset: the link works once (two uses race to one), revokes every session, forgets login failures; old password out, new one in', async () => {
    const { email, password, body } = await registerUser(service)
    const second = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
    for (const wrong of ['wrong password 1', 'wrong password 2']) {
      assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: wrong } })).status, 401)
    }

    const forgot = await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email: ` ${email.toUpperCase()} ` } })
    assert.equal(forgot.status, 202)
    const token = linkToken(await smtp.waitForMail('the reset mail', sentTo(email, 'Reset your password')), 'reset-password')

    const [first, racer] = await Promise.all([
      request(service, 'POST', '/api/v1/auth/password/reset', { body: { token, password: 'a brand new password' } }),
      request(service, 'POST', '/api/v1/auth/password/reset', { body: { token, password: 'another new password' } }),
    ])
    const statuses = [first.status, racer.status].sort()
    assert.deepEqual(statuses, [204, 401], 'exactly one use wins')
    const newPassword = first.status === 204 ? 'a brand new password' : 'another new password'

    for (const refreshToken of [body.refreshToken, second.body.refreshToken]) {
      const refreshed = await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken } })
      assert.equal(refreshed.status, 401, 'every session revoked')
    }
    const { rows } = await service.db.pool.query("SELECT 1 FROM login_failures WHERE scope = 'account' AND key = $1", [email])
    assert.equal(rows.length, 0, 'the failed logins are forgotten')
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).status, 401, 'the old password fails')
    const signedIn = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: newPassword } })
    assert.equal(signedIn.status, 200, 'the new one works')
    assert.equal(signedIn.body.user.emailVerified, true, 'a reset by mail proves the address')

    // Used, unknown and expired tokens: one answer.
    const used = await request(service, 'POST', '/api/v1/auth/password/reset', { body: { token, password: 'yet another password' } })
    const unknown = await request(service, 'POST', '/api/v1/auth/password/reset', { body: { token: 'A'.repeat(43), password: 'yet another password' } })
    assert.equal((await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email } })).status, 202)
    const mails = () => smtp.messages.filter(sentTo(email, 'Reset your password'))
    await waitFor('the second reset mail', () => mails().length === 2)
    const expiring = linkToken(mails()[1] as ReceivedMail, 'reset-password')
    await service.db.pool.query("UPDATE account_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1", [createHash('sha256').update(expiring).digest()])
    const expired = await request(service, 'POST', '/api/v1/auth/password/reset', { body: { token: expiring, password: 'yet another password' } })
    for (const refused of [used, unknown, expired]) {
      assert.equal(refused.status, 401)
      assert.deepEqual(refused.body, used.body)
    }
    assert.equal(used.body.error.code, 'ACCOUNT_TOKEN_INVALID')
  })

  it('forgot answers an unknown and a known email identically (status, body, headers but the date), and mails only the known one', async (t) => {
    const { email: known } = await registerUser(service)
    const unknown = uniqueEmail('nobody')
    const forUnknown = await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email: unknown }, from: '127.0.0.3' })
    const forKnown = await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email: known }, from: '127.0.0.3' })
    assert.equal(forUnknown.status, 202)
    assert.equal(forKnown.status, forUnknown.status)
    assert.deepEqual(forKnown.body, forUnknown.body)
    assert.deepEqual(headersMinusDate(forKnown), headersMinusDate(forUnknown))
    await smtp.waitForMail('the known account\'s reset mail', sentTo(known, 'Reset your password'))
    assert.equal(await outboxCount(service, unknown, 'password_reset'), 0)

    // A figure, not a bound (the machine is shared): round trips for known and unknown addresses, alternated.
    const knownEmails = await Promise.all(Array.from({ length: 10 }, async () => (await registerUser(service)).email))
    const timings: Record<string, number[]> = { known: [], unknown: [] }
    for (const knownEmail of knownEmails) {
      for (const [label, email] of [['known', knownEmail], ['unknown', uniqueEmail('nobody')]] as const) {
        const startedAt = performance.now()
        await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email }, from: '127.0.0.4' })
        timings[label]?.push(performance.now() - startedAt)
      }
    }
    const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
    t.diagnostic(`forgot, median of 10 round trips: known ${median(timings.known ?? []).toFixed(2)} ms, unknown ${median(timings.unknown ?? []).toFixed(2)} ms`)
  })

  it('throttles: past the per-account bound still 202 and no mail; past the per-client bound 429 with Retry-After', async () => {
    const { email } = await registerUser(service)
    const from = '127.0.0.7'
    for (let i = 0; i < 4; i += 1) {
      assert.equal((await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email }, from })).status, 202)
    }
    assert.equal(await outboxCount(service, email, 'password_reset'), 2, 'two mails: the account bound')
    let refused: JsonResponse | undefined
    for (let i = 0; i < 40 && refused === undefined; i += 1) {
      const response = await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email: uniqueEmail('spray') }, from })
      if (response.status !== 202) refused = response
    }
    assert.ok(refused !== undefined, 'the client bound was reached')
    assert.equal(refused.status, 429)
    assert.equal(refused.body.error.code, 'TOO_MANY_ATTEMPTS')
    assert.ok(Number(refused.headers.get('retry-after')) > 0)
    const resend = await request(service, 'POST', '/api/v1/auth/verify-email/resend', { body: { email }, from })
    assert.equal(resend.status, 429, 'the resend route shares the bound')
    assert.equal((await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email: uniqueEmail('other') }, from: '127.0.0.8' })).status, 202, 'other clients are not held')
  })

  it('resend mails a new verification link to an unverified account only', async () => {
    const { email } = await registerUser(service)
    assert.equal((await request(service, 'POST', '/api/v1/auth/verify-email/resend', { body: { email } })).status, 202)
    await waitFor('two verification mails', () => smtp.messages.filter(sentTo(email, 'Confirm your email address')).length === 2)
    const token = linkToken(smtp.messages.filter(sentTo(email, 'Confirm your email address'))[1] as ReceivedMail, 'verify-email')
    assert.equal((await request(service, 'POST', '/api/v1/auth/verify-email', { body: { token } })).status, 204)
    assert.equal((await request(service, 'POST', '/api/v1/auth/verify-email/resend', { body: { email } })).status, 202)
    assert.equal(await outboxCount(service, email, 'verify_email'), 2, 'verified: nothing more is sent')
  })

  it('enumeration-safe registration: the same 202 for a new and a taken address; the owner is told; an unverified login looks like a wrong password', async () => {
    const email = uniqueEmail('safe')
    const password = 'correct horse battery staple'
    const created = await request(strict, 'POST', '/api/v1/auth/register', { body: { email, password } })
    const taken = await request(strict, 'POST', '/api/v1/auth/register', { body: { email, password: 'someone else entirely' } })
    assert.equal(created.status, 202)
    assert.equal(taken.status, created.status)
    assert.deepEqual(taken.body, created.body)
    assert.deepEqual(headersMinusDate(taken), headersMinusDate(created))
    assert.equal(created.body.accessToken, undefined, 'nobody is signed in')
    await smtp.waitForMail('the notice to the owner', sentTo(email, 'Someone tried to register with your address'))
    const token = linkToken(await smtp.waitForMail('the verification mail', sentTo(email, 'Confirm your email address')), 'verify-email')

    // Register, then log in with the same password: were the address free, the new (unverified)
    // account's right password must answer exactly as a taken address's wrong one.
    const wrong = await request(strict, 'POST', '/api/v1/auth/login', { body: { email, password: 'someone else entirely' } })
    assert.equal(wrong.status, 401, 'a wrong password is a wrong password, verified or not')
    const unverified = await request(strict, 'POST', '/api/v1/auth/login', { body: { email, password } })
    assert.equal(unverified.status, 401)
    assert.deepEqual(unverified.body, wrong.body)
    assert.deepEqual(headersMinusDate(unverified), headersMinusDate(wrong))
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).status, 200, 'without the setting, the same account signs in')

    assert.equal((await request(strict, 'POST', '/api/v1/auth/verify-email', { body: { token } })).status, 204)
    const verified = await request(strict, 'POST', '/api/v1/auth/login', { body: { email, password } })
    assert.equal(verified.status, 200)
    assert.equal(verified.body.user.emailVerified, true)
  })

  it('TOLLBOOTH_REQUIRE_VERIFIED_EMAIL: an unverified login gets 403 EMAIL_NOT_VERIFIED, only after the password matched', async () => {
    const email = uniqueEmail('verified-only')
    const password = 'correct horse battery staple'
    const registered = await request(verifiedOnly, 'POST', '/api/v1/auth/register', { body: { email, password } })
    assert.equal(registered.status, 201)
    // Immediate registration signs in; the session it opened cannot be refreshed while the address is unverified.
    const refreshed = await request(verifiedOnly, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: registered.body.refreshToken } })
    assert.deepEqual([refreshed.status, refreshed.body.error?.code], [403, 'EMAIL_NOT_VERIFIED'])
    const token = linkToken(await smtp.waitForMail('the verification mail', sentTo(email, 'Confirm your email address')), 'verify-email')
    assert.equal((await request(verifiedOnly, 'POST', '/api/v1/auth/login', { body: { email, password: 'someone else entirely' } })).status, 401)
    const unverified = await request(verifiedOnly, 'POST', '/api/v1/auth/login', { body: { email, password } })
    assert.equal(unverified.status, 403)
    assert.equal(unverified.body.error.code, 'EMAIL_NOT_VERIFIED')
    assert.equal((await request(verifiedOnly, 'POST', '/api/v1/auth/verify-email', { body: { token } })).status, 204)
    assert.equal((await request(verifiedOnly, 'POST', '/api/v1/auth/login', { body: { email, password } })).status, 200)
  })

  it('two services on one outbox send each mail exactly once', async () => {
    const recipients = Array.from({ length: 30 }, (_, i) => `once-${i}-${Date.now()}@example.com`)
    for (const recipient of recipients) await enqueueMail(service.db.pool, { kind: 'test', recipient, subject: 'once', text: 'exactly once' })
    service.app.mail.wake()
    strict.app.mail.wake()
    const received = (recipient: string): number => smtp.messages.filter((mail) => mail.to.includes(recipient)).length
    await waitFor('every mail sent', async () => {
      const { rows } = await service.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM mail_outbox WHERE recipient = ANY($1) AND status = 'sent'", [recipients])
      return rows[0]?.n === recipients.length
    })
    assert.deepEqual(recipients.filter((recipient) => received(recipient) !== 1), [], 'each received once')
    const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM mail_outbox WHERE recipient = ANY($1) AND body_text IS NOT NULL', [recipients])
    assert.equal(rows[0]?.n, 0, 'a sent mail\'s text (its link) is not kept')
  })
})

describe('the mail dispatcher', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db?.drop() })

  /** A port nothing listens on (an SMTP server's, just closed). */
  async function deadPort (): Promise<number> {
    const server = await startSmtpServer()
    await server.close()
    return server.port
  }

  /**
   * A port held by a server that hangs up on every connection: every send fails at once, and,
   * held for the whole test, the port cannot be taken by another test's listener meanwhile (a
   * port closed and handed back, as `deadPort` does, can be, and a send to a listener that never
   * greets waits out the SMTP timeout instead).
   */
  async function hangingUpPort (): Promise<{ port: number, close: () => Promise<void> }> {
    const server = net.createServer((socket) => { socket.destroy() })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return { port: (server.address() as AddressInfo).port, close: async () => { await new Promise((resolve) => server.close(resolve)) } }
  }

  async function status (recipient: string): Promise<{ status: string, attempts: number, last_error: string | null, body_text: string | null } | undefined> {
    const { rows } = await db.pool.query('SELECT status, attempts, last_error, body_text FROM mail_outbox WHERE recipient = $1', [recipient])
    return rows[0]
  }

  it('keeps a mail while the SMTP server is down, retries with backoff, and delivers it once the server is up', async () => {
    const port = await deadPort()
    const dispatcher = new MailDispatcher({
      db: db.pool,
      log: createLogger('silent'),
      transport: smtpTransport({ url: `smtp://127.0.0.1:${port}`, from: 'tollbooth <no-reply@example.com>', timeoutMs: 2000 }),
      logLinks: false,
      maxAttempts: 100,
      retryDelayMs: 20,
      pollIntervalMs: 60_000,
    })
    const recipient = uniqueEmail('patient')
    let smtp: TestSmtpServer | undefined
    try {
      dispatcher.start()
      await enqueueMail(db.pool, { kind: 'test', recipient, subject: 'later', text: 'delivered after the outage' })
      dispatcher.wake()
      await waitFor('two failed attempts', async () => ((await status(recipient))?.attempts ?? 0) >= 2)
      const waiting = await status(recipient)
      assert.equal(waiting?.status, 'pending')
      assert.match(waiting?.last_error ?? '', /ECONNREFUSED/)
      smtp = await startSmtpServer(port)
      const mail = await smtp.waitForMail('the mail after the outage', (candidate) => candidate.to.includes(recipient))
      assert.equal(mail.text.trim(), 'delivered after the outage')
      assert.equal(mail.from, 'no-reply@example.com')
      await waitFor('the row marked sent', async () => (await status(recipient))?.status === 'sent')
    } finally {
      await dispatcher.close()
      await smtp?.close()
    }
  })

  it('gives a mail up after the configured attempts, logged without its link', async () => {
    const { logger, lines } = capturingLogger('info')
    const refusing = await hangingUpPort()
    const dispatcher = new MailDispatcher({
      db: db.pool,
      log: logger,
      transport: smtpTransport({ url: `smtp://127.0.0.1:${refusing.port}`, from: 'tollbooth <no-reply@example.com>', timeoutMs: 2000 }),
      logLinks: true,
      maxAttempts: 3,
      retryDelayMs: 10,
      pollIntervalMs: 60_000,
    })
    const recipient = uniqueEmail('lost')
    const secret = 'SECRET-TOKEN-in-the-link'
    try {
      dispatcher.start()
      await enqueueMail(db.pool, { kind: 'test', recipient, subject: 'never', text: `https://app.example.com/reset-password?token=${secret}` })
      dispatcher.wake()
      await waitFor('the mail given up', async () => (await status(recipient))?.status === 'failed')
      const row = await status(recipient)
      assert.equal(row?.attempts, 3)
      assert.equal(row?.body_text, null, 'the link is not kept')
      assert.ok(lines.some((line) => /given up after 3 attempt/.test(String(line.msg)) && line.level === 50), JSON.stringify(lines))
      assert.equal(lines.filter((line) => line.msg === 'mail not sent; will retry').length, 2)
      assert.ok(!JSON.stringify(lines).includes(secret), 'no line holds the token')
    } finally {
      await dispatcher.close()
      await refusing.close()
    }
  })

  const smtpDispatcher = (url: string, options: { log?: ReturnType<typeof createLogger>, leaseMs?: number, pollIntervalMs?: number } = {}): MailDispatcher => new MailDispatcher({
    db: db.pool,
    log: options.log ?? createLogger('silent'),
    transport: smtpTransport({ url, from: 'tollbooth <no-reply@example.com>', timeoutMs: 10_000 }),
    logLinks: false,
    maxAttempts: 3,
    retryDelayMs: 60_000,
    pollIntervalMs: options.pollIntervalMs ?? 60_000,
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
  })

  async function enqueueMany (label: string, count: number): Promise<string[]> {
    const recipients = Array.from({ length: count }, (_, i) => uniqueEmail(`${label}-${i}`))
    for (const recipient of recipients) await enqueueMail(db.pool, { kind: 'test', recipient, subject: label, text: 'one of several' })
    return recipients
  }

  async function rowsOf (recipients: string[]): Promise<Array<{ recipient: string, status: string, attempts: number, due: boolean }>> {
    const { rows } = await db.pool.query('SELECT recipient, status, attempts, next_attempt_at <= now() AS due FROM mail_outbox WHERE recipient = ANY($1) ORDER BY id', [recipients])
    return rows
  }

  it('with a slow SMTP server, two dispatchers still send each mail once: a lease covers one send, not a batch', async () => {
    // Each mail takes 400 ms to be accepted; the lease is 3 s. Ten mails claimed as one batch
    // would take 4 s, and the other dispatcher (polling every 100 ms) would send the last ones again.
    const smtp = await startSmtpServer(0, { beforeAccept: async () => { await new Promise((resolve) => setTimeout(resolve, 400)) } })
    const dispatchers = [smtpDispatcher(smtp.url, { leaseMs: 3000, pollIntervalMs: 100 }), smtpDispatcher(smtp.url, { leaseMs: 3000, pollIntervalMs: 100 })]
    const recipients = await enqueueMany('slow', 10)
    try {
      for (const dispatcher of dispatchers) dispatcher.start()
      for (const dispatcher of dispatchers) dispatcher.wake()
      await waitFor('every mail sent', async () => (await rowsOf(recipients)).every((row) => row.status === 'sent'), { timeoutMs: 30_000 })
      // A second claim of a mail counts a second attempt, before its send: one attempt each, none sent again.
      assert.deepEqual((await rowsOf(recipients)).map((row) => row.attempts), recipients.map(() => 1), 'each claimed once')
      assert.deepEqual(recipients.filter((recipient) => smtp.messages.filter((mail) => mail.to.includes(recipient)).length !== 1), [], 'each received once')
    } finally {
      await Promise.all(dispatchers.map(async (dispatcher) => { await dispatcher.close() }))
      await smtp.close()
    }
  })

  it('close waits for the send under way only; the mails not yet sent stay pending, due, their attempt not counted', async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => { release = resolve })
    let arrived: (mail: ReceivedMail) => void = () => {}
    const first = new Promise<ReceivedMail>((resolve) => { arrived = resolve })
    let calls = 0
    // The first mail is held until the test lets it go; any later one is accepted at once.
    const smtp = await startSmtpServer(0, { beforeAccept: async (mail) => { if (calls++ === 0) { arrived(mail); await held } } })
    const dispatcher = smtpDispatcher(smtp.url)
    const recipients = await enqueueMany('closing', 5)
    try {
      dispatcher.start()
      dispatcher.wake()
      const sending = await first
      const closed = dispatcher.close()
      release()
      const started = performance.now()
      await closed
      assert.ok(performance.now() - started < 5000, 'close returned once the send under way was done')
      assert.deepEqual(smtp.messages.map((mail) => mail.to), [sending.to], 'only the mail being sent went out')
      const rows = await rowsOf(recipients)
      assert.deepEqual(rows.map((row) => row.status), ['sent', 'pending', 'pending', 'pending', 'pending'])
      assert.deepEqual(rows.slice(1).map((row) => [row.attempts, row.due]), rows.slice(1).map(() => [0, true]))
    } finally {
      release()
      await dispatcher.close()
      await smtp.close()
      await db.pool.query('DELETE FROM mail_outbox WHERE recipient = ANY($1)', [recipients]) // no pending mail for the next test
    }
  })

  it('a mail claimed as the dispatcher closes is handed back unsent', async () => {
    const smtp = await startSmtpServer()
    const dispatcher = smtpDispatcher(smtp.url)
    const [recipient = ''] = await enqueueMany('handed-back', 1)
    try {
      dispatcher.start()
      dispatcher.wake() // its claim is under way when close is called
      await dispatcher.close()
      assert.deepEqual(await rowsOf([recipient]), [{ recipient, status: 'pending', attempts: 0, due: true }])
      assert.equal(smtp.messages.length, 0)
    } finally {
      await smtp.close()
    }
  })

  it('names the SMTP server in the log at start, without its user or password', async () => {
    const { logger, lines } = capturingLogger('info')
    const dispatcher = smtpDispatcher('smtp://mailer-login:pa55-w0rd@127.0.0.1:2525', { log: logger })
    dispatcher.start()
    await dispatcher.close()
    assert.deepEqual(lines.filter((line) => line.smtpServer !== undefined).map((line) => [line.msg, line.smtpServer]), [['mail is sent through the SMTP server', 'smtp://127.0.0.1:2525']])
    assert.ok(!/pa55-w0rd|mailer-login/.test(JSON.stringify(lines)), 'neither the user nor the password is logged')
  })

  it('without SMTP: warns once at start, writes each mail to the log with its link, keeps it in the outbox; close leaves no timer', async () => {
    await db.pool.query('SELECT 1') // an idle pooled connection (and its idle timer) before the count
    const timersBefore = process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length
    const { logger, lines } = capturingLogger('info')
    const dispatcher = new MailDispatcher({ db: db.pool, log: logger, transport: undefined, logLinks: true, maxAttempts: 3, retryDelayMs: 10, pollIntervalMs: 60_000 })
    const recipient = uniqueEmail('dev')
    dispatcher.start()
    dispatcher.start()
    await enqueueMail(db.pool, { kind: 'test', recipient, subject: 'dev mode', text: 'https://app.example.com/verify-email?token=visible-in-dev' })
    dispatcher.wake()
    await waitFor('the mail in the log', () => lines.some((line) => (line.mail as { to?: string } | undefined)?.to === recipient))
    assert.equal(lines.filter((line) => line.level === 40 && /TOLLBOOTH_SMTP_URL is unset/.test(String(line.msg))).length, 1, 'warned once')
    const logged = lines.find((line) => (line.mail as { to?: string } | undefined)?.to === recipient)
    assert.match(String((logged?.mail as { text?: string }).text), /verify-email\?token=visible-in-dev/)
    const row = await status(recipient)
    assert.equal(row?.status, 'logged')
    assert.ok(row?.body_text?.includes('visible-in-dev'), 'kept in the outbox')
    await waitFor('the run over', () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length === timersBefore + 1)
    await dispatcher.close()
    assert.equal(process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length, timersBefore, 'no timer left')
  })

  it('without SMTP in a deployment (logLinks false): names each mail in the log, never its link, and keeps no text', async () => {
    const { logger, lines } = capturingLogger('info')
    const dispatcher = new MailDispatcher({ db: db.pool, log: logger, transport: undefined, logLinks: false, maxAttempts: 3, retryDelayMs: 10, pollIntervalMs: 60_000 })
    const recipient = uniqueEmail('deployed')
    const secret = 'SECRET-TOKEN-never-logged'
    // Logged with its link by an earlier, development-mode run on the same table.
    const earlier = uniqueEmail('logged-before')
    await enqueueMail(db.pool, { kind: 'test', recipient: earlier, subject: 'from before', text: 'https://app.example.com/reset-password?token=left-from-before' })
    await claimForLog(db.pool, 100, true)
    assert.ok((await status(earlier))?.body_text?.includes('left-from-before'))
    try {
      dispatcher.start()
      await enqueueMail(db.pool, { kind: 'test', recipient, subject: 'deployed without SMTP', text: `https://app.example.com/reset-password?token=${secret}` })
      dispatcher.wake()
      await waitFor('the mail named in the log', () => lines.some((line) => (line.mail as { to?: string } | undefined)?.to === recipient))
      const warning = lines.find((line) => line.level === 40 && /TOLLBOOTH_SMTP_URL is unset/.test(String(line.msg)))
      assert.match(String(warning?.msg), /links are not logged/)
      const named = lines.find((line) => (line.mail as { to?: string } | undefined)?.to === recipient)
      assert.deepEqual(Object.keys(named?.mail as object).sort(), ['id', 'kind', 'subject', 'to'])
      assert.ok(!JSON.stringify(lines).includes(secret), 'no line holds the token')
      const row = await status(recipient)
      assert.equal(row?.status, 'logged')
      assert.equal(row?.body_text, null, 'the link is not kept in the outbox either')
      assert.equal(await status(earlier).then((earlierRow) => earlierRow?.body_text), null, 'a mail logged earlier with its link has its text cleared')
    } finally {
      await dispatcher.close()
    }
  })
})

describe('a service without SMTP', () => {
  it('with DATABASE_URL names the registration mail in its log, never its link; with TOLLBOOTH_MAIL_LOG_LINKS the link is there', async () => {
    for (const logLinks of [false, true]) {
      const { logger, lines } = capturingLogger('info')
      const service = await startTestService({ logger, config: logLinks ? { mailLogLinks: true } : {} })
      try {
        const { email } = await registerUser(service)
        await waitFor('the mail in the log', () => lines.some((line) => (line.mail as { to?: string } | undefined)?.to === email))
        const mail = lines.find((line) => (line.mail as { to?: string } | undefined)?.to === email)?.mail as { text?: string }
        if (logLinks) assert.match(String(mail.text), /verify-email\?token=/)
        else assert.ok(mail.text === undefined && !JSON.stringify(lines).includes('verify-email?token='), 'no link in any line')
      } finally {
        await service.close()
      }
    }
  })
})
