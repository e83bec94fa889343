/**
 * Email for real: verification, password reset, the registration modes and the mail bounds
 * through services that write each mail, link included, to their debug log; and the outbox's
 * dispatcher on its own with a real SMTP server (smtp-server on 127.0.0.1): SMTP down then up,
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
import { insertAccountToken } from '../../src/db/accounts/account-tokens.js'
import { enqueueMail } from '../../src/db/mail-outbox.js'
import { tokenStandIn } from '../../src/mail/link-token.js'
import { verificationMail } from '../../src/mail/messages.js'
import { smtpTransport } from '../../src/mail/transport.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { capturingLogger, registerUser, request, startTestService, uniqueEmail, type JsonResponse, type TestService } from '../helpers/service.js'
import { linkToken, logMailbox, startSmtpServer, type LogMailbox, type ReceivedMail, type TestSmtpServer } from '../helpers/smtp.js'
import { waitFor } from '../helpers/wait.js'

const publicUrl = 'https://app.example.com/account'
const sentTo = (email: string, subject: string) => (mail: ReceivedMail): boolean => mail.to.includes(email) && mail.subject === subject

/** Headers that may differ between two identical answers: the date, nothing else (and the names given). */
function headersMinusDate (response: JsonResponse, also: string[] = []): Record<string, string> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => { if (name !== 'date' && !also.includes(name)) headers[name] = value })
  return headers
}

const sha256 = (token: string): Buffer => createHash('sha256').update(token).digest()

async function outboxCount (service: TestService, email: string, kind: string): Promise<number> {
  const { rows } = await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM mail_outbox WHERE recipient = $1 AND kind = $2', [email, kind])
  return rows[0]?.n ?? 0
}

describe('account mail through the service', () => {
  /** The mails of the three services below, as their debug log writes them. */
  let mailbox: LogMailbox
  /** Immediate registration, verification not required. */
  let service: TestService
  /** The same database: enumeration-safe registration (so a verified address is required, and an unverified login looks like a wrong password). */
  let strict: TestService
  /** The same database: immediate registration, verified address required (403 EMAIL_NOT_VERIFIED). */
  let verifiedOnly: TestService

  before(async () => {
    mailbox = logMailbox()
    const mail = { mailLogLinks: true, publicUrl, mailThrottleAccountRequests: 2, mailThrottleAddressRequests: 40, mailPollIntervalMs: 200 }
    service = await startTestService({ config: mail, logger: mailbox.logger })
    strict = await startTestService({ db: service.db, config: { ...mail, registrationMode: 'enumeration-safe' }, logger: mailbox.logger })
    verifiedOnly = await startTestService({ db: service.db, config: { ...mail, requireVerifiedEmail: true }, logger: mailbox.logger })
  })
  after(async () => {
    await verifiedOnly?.close()
    await strict?.close()
    await service?.close()
  })

  it('registration mails a verification link (queued in its transaction); the link verifies the address, once', async () => {
    const { email, password, body } = await registerUser(service)
    assert.equal(body.user.emailVerified, false)
    const mail = await mailbox.waitForMail('the verification mail', sentTo(email, 'Confirm your email address'))
    assert.ok(mail.text.includes(`${publicUrl}/verify-email?token=`), mail.text)
    const token = linkToken(mail, 'verify-email')
    assert.equal(token.length, 43, '32 random bytes, base64url')
    const { rows } = await service.db.pool.query('SELECT 1 FROM account_tokens WHERE token_hash = $1', [sha256(token)])
    assert.equal(rows.length, 1, 'stored as its SHA-256')
    assert.ok(!mailbox.lines.some((line) => Number(line.level) > 20 && JSON.stringify(line).includes(token)), 'the link is logged at debug level only')

    // A registration that fails (the address is taken) queues nothing: its transaction is rolled back.
    assert.equal((await request(service, 'POST', '/api/v1/auth/register', { body: { email, password } })).status, 409)
    assert.equal(await outboxCount(service, email, 'verify_email'), 1)

    assert.equal((await request(service, 'POST', '/api/v1/auth/verify-email', { body: { token } })).status, 204)
    const login = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
    assert.equal(login.body.user.emailVerified, true)
    assert.equal((await request(service, 'GET', '/api/v1/me', { token: login.body.accessToken })).body.emailVerified, true)
    const again = await request(service, 'POST', '/api/v1/auth/verify-email', { body: { token } })
    assert.equal(again.status, 401)
    assert.equal(again.body.error.code, 'ACCOUNT_TOKEN_INVALID')
  })

  it('verification ends every session the account had and forgets its devices: a pre-registration hijack keeps no session', async () => {
    // Someone registers the owner's address first (immediate mode signs them in), and signs in again elsewhere.
    const { email, password, body } = await registerUser(service)
    const second = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
    assert.equal(second.status, 200)
    const devices = async (): Promise<number> => (await service.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM devices WHERE user_id = $1', [body.user.id])).rows[0]?.n ?? -1
    assert.equal(await devices(), 2, 'both clients are known devices of the account')
    // The owner verifies the address with the link the registration mailed to it.
    const token = linkToken(await mailbox.waitForMail('the verification mail', sentTo(email, 'Confirm your email address')), 'verify-email')
    assert.equal((await request(service, 'POST', '/api/v1/auth/verify-email', { body: { token } })).status, 204)
    for (const session of [body, second.body]) {
      const me = await request(service, 'GET', '/api/v1/me', { token: session.accessToken })
      assert.equal(me.status, 401)
      assert.equal(me.body.error.code, 'AUTH_SESSION_ENDED')
      assert.equal((await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: session.refreshToken } })).status, 401)
    }
    assert.equal(await devices(), 0, 'no device stays known')
    const { rows } = await service.db.pool.query<{ reason: string }>('SELECT DISTINCT revoked_reason AS reason FROM sessions WHERE user_id = $1', [body.user.id])
    assert.deepEqual(rows.map((row) => row.reason), ['email_verified'])
  })

  it('password reset: the link works once (two uses race to one), revokes every session, forgets login failures; old password out, new one in', async () => {
    const { email, password, body } = await registerUser(service)
    const second = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
    for (const wrong of ['wrong password 1', 'wrong password 2']) {
      assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: wrong } })).status, 401)
    }

    const forgot = await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email: ` ${email.toUpperCase()} ` } })
    assert.equal(forgot.status, 202)
    const token = linkToken(await mailbox.waitForMail('the reset mail', sentTo(email, 'Reset your password')), 'reset-password')

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
    const { rows } = await service.db.pool.query("SELECT 1 FROM login_failures WHERE scope = 'account' AND key = $1 AND failures > 0", [email])
    assert.equal(rows.length, 0, 'the failed logins are forgotten')
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).status, 401, 'the old password fails')
    const signedIn = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: newPassword } })
    assert.equal(signedIn.status, 200, 'the new one works')
    assert.equal(signedIn.body.user.emailVerified, true, 'a reset by mail proves the address')

    // Used, unknown and expired tokens: one answer.
    const used = await request(service, 'POST', '/api/v1/auth/password/reset', { body: { token, password: 'yet another password' } })
    const unknown = await request(service, 'POST', '/api/v1/auth/password/reset', { body: { token: 'A'.repeat(43), password: 'yet another password' } })
    assert.equal((await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email } })).status, 202)
    const mails = () => mailbox.messages.filter(sentTo(email, 'Reset your password'))
    await waitFor('the second reset mail', () => mails().length === 2)
    const expiring = linkToken(mails()[1] as ReceivedMail, 'reset-password')
    await service.db.pool.query("UPDATE account_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1", [sha256(expiring)])
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
    await mailbox.waitForMail('the known account\'s reset mail', sentTo(known, 'Reset your password'))
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

  it('throttles: past the per-account bound 429 with Retry-After, alike for an email without an account; past the per-client bound the same', async () => {
    const { email } = await registerUser(service)
    const unknown = uniqueEmail('nobody')
    const from = '127.0.0.7'
    const refusals: JsonResponse[] = []
    for (const address of [email, unknown]) {
      for (let i = 0; i < 2; i += 1) {
        assert.equal((await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email: address }, from })).status, 202)
      }
      const refused = await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email: address }, from })
      assert.equal(refused.status, 429, 'the third request is refused in the open, never dropped in silence')
      assert.equal(refused.body.error.code, 'TOO_MANY_ATTEMPTS')
      const retryAfter = Number(refused.headers.get('retry-after'))
      assert.ok(retryAfter > 0 && retryAfter <= 3600, `Retry-After ${retryAfter}: until the window ends`)
      refusals.push(refused)
    }
    const [known, nobody] = refusals as [JsonResponse, JsonResponse]
    assert.deepEqual(nobody.body, known.body, 'an email without an account is answered alike')
    assert.deepEqual(headersMinusDate(nobody, ['retry-after']), headersMinusDate(known, ['retry-after']))
    assert.equal(await outboxCount(service, email, 'password_reset'), 2, 'two mails: the account bound')
    const resend = await request(service, 'POST', '/api/v1/auth/verify-email/resend', { body: { email }, from: '127.0.0.9' })
    assert.equal(resend.status, 429, 'the resend route shares the email\'s bound, from any client')

    let refused: JsonResponse | undefined
    for (let i = 0; i < 40 && refused === undefined; i += 1) {
      const response = await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email: uniqueEmail('spray') }, from })
      if (response.status !== 202) refused = response
    }
    assert.ok(refused !== undefined, 'the client bound was reached')
    assert.equal(refused.status, 429)
    assert.equal(refused.body.error.code, 'TOO_MANY_ATTEMPTS')
    assert.ok(Number(refused.headers.get('retry-after')) > 0)
    assert.equal((await request(service, 'POST', '/api/v1/auth/verify-email/resend', { body: { email: uniqueEmail('other') }, from })).status, 429, 'the resend route shares the client bound')
    assert.equal((await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email: uniqueEmail('other') }, from: '127.0.0.8' })).status, 202, 'other clients are not held')
  })

  it('the outbox holds no live link or token: each link is made at its send, only its hash stored', async () => {
    const { email } = await registerUser(service)
    assert.equal((await request(service, 'POST', '/api/v1/auth/verify-email/resend', { body: { email } })).status, 202)
    assert.equal((await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email } })).status, 202)
    const mails = (): ReceivedMail[] => mailbox.messages.filter((mail) => mail.to.includes(email))
    await waitFor('three mails', () => mails().length === 3)
    const links = mails().map((mail) => ({ reset: mail.subject === 'Reset your password', token: linkToken(mail, mail.subject === 'Reset your password' ? 'reset-password' : 'verify-email') }))
    const tokens = links.map((link) => link.token)
    const { rows } = await service.db.pool.query<{ row: string, link_token_hash: Buffer }>('SELECT row_to_json(m)::text AS row, link_token_hash FROM mail_outbox m WHERE recipient = $1', [email])
    assert.equal(rows.length, 3)
    for (const { row, link_token_hash: stored } of rows) {
      assert.ok(!/token=/.test(row), `no link in ${row}`)
      for (const token of tokens) assert.ok(!row.includes(token), 'no token')
      assert.ok(tokens.some((token) => sha256(token).equals(stored)), 'the hash of the token sent')
    }
    // The links work: the account tokens hold the same hashes.
    const verification = links.find((link) => !link.reset)?.token ?? ''
    assert.equal((await request(service, 'POST', '/api/v1/auth/verify-email', { body: { token: verification } })).status, 204)
  })

  it('resend mails a new verification link to an unverified account only', async () => {
    const { email } = await registerUser(service)
    assert.equal((await request(service, 'POST', '/api/v1/auth/verify-email/resend', { body: { email } })).status, 202)
    await waitFor('two verification mails', () => mailbox.messages.filter(sentTo(email, 'Confirm your email address')).length === 2)
    const token = linkToken(mailbox.messages.filter(sentTo(email, 'Confirm your email address'))[1] as ReceivedMail, 'verify-email')
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
    await mailbox.waitForMail('the notice to the owner', sentTo(email, 'Someone tried to register with your address'))
    const token = linkToken(await mailbox.waitForMail('the verification mail', sentTo(email, 'Confirm your email address')), 'verify-email')

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
    const token = linkToken(await mailbox.waitForMail('the verification mail', sentTo(email, 'Confirm your email address')), 'verify-email')
    assert.equal((await request(verifiedOnly, 'POST', '/api/v1/auth/login', { body: { email, password: 'someone else entirely' } })).status, 401)
    const unverified = await request(verifiedOnly, 'POST', '/api/v1/auth/login', { body: { email, password } })
    assert.equal(unverified.status, 403)
    assert.equal(unverified.body.error.code, 'EMAIL_NOT_VERIFIED')
    assert.equal((await request(verifiedOnly, 'POST', '/api/v1/auth/verify-email', { body: { token } })).status, 204)
    assert.equal((await request(verifiedOnly, 'POST', '/api/v1/auth/login', { body: { email, password } })).status, 200)
  })

  it('two services on one outbox handle each mail exactly once', async () => {
    const recipients = Array.from({ length: 30 }, (_, i) => `once-${i}-${Date.now()}@example.com`)
    for (const recipient of recipients) await enqueueMail(service.db.pool, { kind: 'test', recipient, subject: 'once', text: 'exactly once' })
    service.app.mail.wake()
    strict.app.mail.wake()
    const handled = (recipient: string): number => mailbox.messages.filter((mail) => mail.to.includes(recipient)).length
    await waitFor('every mail logged', async () => {
      const { rows } = await service.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM mail_outbox WHERE recipient = ANY($1) AND status = 'logged'", [recipients])
      return rows[0]?.n === recipients.length
    })
    assert.deepEqual(recipients.filter((recipient) => handled(recipient) !== 1), [], 'each logged once')
  })

  it('101 registrations of plus-addressed and dotted variants of one mailbox: the 101st verification mail is not sent, its registration answered as any other', async () => {
    const local = `cannon${process.pid}x${Date.now()}`
    const variants = Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? `${local}+${i}@example.com` : `${local.slice(0, 3)}.${local.slice(3)}+${i}@Example.com`))
    const last = `${local.slice(0, 1)}.${local.slice(1)}@example.com`
    const answers: JsonResponse[] = []
    for (const email of [...variants, last]) {
      answers.push(await request(strict, 'POST', '/api/v1/auth/register', { body: { email, password: 'correct horse battery staple' } }))
    }
    const first = answers[0] as JsonResponse
    assert.equal(first.status, 202)
    for (const answer of answers) {
      assert.equal(answer.status, first.status)
      assert.deepEqual(answer.body, first.body)
      assert.deepEqual(headersMinusDate(answer), headersMinusDate(first))
    }
    const { rows } = await strict.db.pool.query<{ recipient: string }>("SELECT recipient FROM mail_outbox WHERE kind = 'verify_email' AND recipient LIKE $1", [`${local.slice(0, 3)}%@example.com`])
    assert.equal(rows.length, 100, 'a hundred verification mails')
    assert.ok(!rows.some((row) => row.recipient === last), 'none for the 101st')
    const skipped = mailbox.lines.filter((line) => line.event === 'mail_request_throttled' && line.mailbox === `${local}@example.com`)
    assert.equal(skipped.length, 1, 'the skip is logged once')
    assert.equal(skipped[0]?.level, 30, 'at info')
    assert.deepEqual(skipped[0]?.over, ['mailbox'])
    // Asking for the mail again is refused in the open, for the mailbox, whether or not the variant has an account.
    for (const email of [last, `${local}+never-registered@example.com`]) {
      const resend = await request(strict, 'POST', '/api/v1/auth/verify-email/resend', { body: { email }, from: '127.0.0.10' })
      assert.deepEqual([resend.status, resend.body.error?.code], [429, 'TOO_MANY_ATTEMPTS'], email)
    }
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

  async function status (recipient: string): Promise<{ status: string, attempts: number, last_error: string | null, body_text: string | null, link_token_hash: Buffer | null } | undefined> {
    const { rows } = await db.pool.query('SELECT status, attempts, last_error, body_text, link_token_hash FROM mail_outbox WHERE recipient = $1', [recipient])
    return rows[0]
  }

  /** A new account's verification mail, queued as registration queues it; returns the stand-in its token is stored under until the send. */
  async function queueLinkMail (recipient: string): Promise<Buffer> {
    const { rows } = await db.pool.query<{ id: string }>("INSERT INTO users (email, password_hash) VALUES ($1, 'x') RETURNING id", [recipient])
    const link = { url: 'https://app.example.com/account/verify-email', tokenHash: tokenStandIn() }
    await insertAccountToken(db.pool, { tokenHash: link.tokenHash, purpose: 'verify_email', userId: rows[0]?.id ?? '', ttlSeconds: 3600 })
    await enqueueMail(db.pool, verificationMail(recipient, link, 3600))
    return link.tokenHash
  }

  /** The account tokens of the recipient's account: their hashes, live or not. */
  async function accountTokens (recipient: string): Promise<Array<{ hash: Buffer, live: boolean }>> {
    const { rows } = await db.pool.query<{ token_hash: Buffer, live: boolean }>(
      'SELECT token_hash, used_at IS NULL AND expires_at > now() AS live FROM account_tokens t JOIN users u ON u.id = t.user_id WHERE u.email = $1', [recipient])
    return rows.map((row) => ({ hash: row.token_hash, live: row.live }))
  }

  it('makes a mail\'s link at its send: until then only a stand-in hash is stored, then the hash of the token sent; a retry makes another token', async () => {
    const port = await deadPort()
    const dispatcher = smtpDispatcher(`smtp://127.0.0.1:${port}`, { retryDelayMs: 20, maxAttempts: 100 })
    const recipient = uniqueEmail('linked')
    const standIn = await queueLinkMail(recipient)
    const queued = await status(recipient)
    assert.ok(queued?.link_token_hash?.equals(standIn))
    assert.ok(queued?.body_text?.includes('{link}') === true && !queued.body_text.includes('token='), 'the text holds the link\'s place, not the link')
    let smtp: TestSmtpServer | undefined
    try {
      dispatcher.start()
      dispatcher.wake()
      await waitFor('two failed attempts', async () => ((await status(recipient))?.attempts ?? 0) >= 2)
      const tried = await accountTokens(recipient)
      assert.equal(tried.length, 1)
      assert.ok(!tried[0]?.hash.equals(standIn), 'an attempt replaced the stand-in')
      smtp = await startSmtpServer(port)
      const mail = await smtp.waitForMail('the verification mail', (candidate) => candidate.to.includes(recipient))
      const token = linkToken(mail, 'verify-email')
      assert.ok(mail.text.includes(`https://app.example.com/account/verify-email?token=${token}`), mail.text)
      await waitFor('the row marked sent', async () => (await status(recipient))?.status === 'sent')
      const tokens = await accountTokens(recipient)
      assert.deepEqual(tokens, [{ hash: sha256(token), live: true }], 'the token sent, by its hash, and no other')
      assert.ok((await status(recipient))?.link_token_hash?.equals(sha256(token)))
    } finally {
      await dispatcher.close()
      await smtp?.close()
    }
  })

  it('skips a mail whose link was used or expired before its send: nothing sent, logged at info', async () => {
    const smtp = await startSmtpServer()
    const { logger, lines } = capturingLogger('info')
    const dispatcher = smtpDispatcher(smtp.url, { log: logger })
    const [used, expired] = [uniqueEmail('used-first'), uniqueEmail('expired-first')]
    await db.pool.query('UPDATE account_tokens SET used_at = now() WHERE token_hash = $1', [await queueLinkMail(used)])
    await db.pool.query("UPDATE account_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1", [await queueLinkMail(expired)])
    try {
      dispatcher.start()
      dispatcher.wake()
      await waitFor('both mails skipped', async () => (await status(used))?.status === 'skipped' && (await status(expired))?.status === 'skipped')
      assert.equal(smtp.messages.length, 0)
      assert.equal(lines.filter((line) => line.msg === 'mail not sent: its link was used or expired first' && line.level === 30).length, 2)
    } finally {
      await dispatcher.close()
      await smtp.close()
    }
  })

  it('keeps a mail while the SMTP server is down, retries with backoff, and delivers it once the server is up', async () => {
    const port = await deadPort()
    const dispatcher = new MailDispatcher({
      db: db.pool,
      log: createLogger('silent'),
      transport: smtpTransport({ url: `smtp://127.0.0.1:${port}`, from: 'tollbooth <no-reply@example.com>', timeoutMs: 2000, allowPlaintextLoopback: true }),
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
      transport: smtpTransport({ url: `smtp://127.0.0.1:${refusing.port}`, from: 'tollbooth <no-reply@example.com>', timeoutMs: 2000, allowPlaintextLoopback: true }),
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

  const smtpDispatcher = (url: string, options: { log?: ReturnType<typeof createLogger>, leaseMs?: number, pollIntervalMs?: number, retryDelayMs?: number, maxAttempts?: number } = {}): MailDispatcher => new MailDispatcher({
    db: db.pool,
    log: options.log ?? createLogger('silent'),
    transport: smtpTransport({ url, from: 'tollbooth <no-reply@example.com>', timeoutMs: 10_000, allowPlaintextLoopback: true }),
    logLinks: false,
    maxAttempts: options.maxAttempts ?? 3,
    retryDelayMs: options.retryDelayMs ?? 60_000,
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

  it('without SMTP: warns once at start; names each mail at info, and writes its text, with a link made for it, at debug only; close leaves no timer', async () => {
    await db.pool.query('SELECT 1') // an idle pooled connection (and its idle timer) before the count
    const timersBefore = process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length
    const { logger, lines } = capturingLogger('debug')
    const dispatcher = new MailDispatcher({ db: db.pool, log: logger, transport: undefined, logLinks: true, maxAttempts: 3, retryDelayMs: 10, pollIntervalMs: 60_000 })
    const recipient = uniqueEmail('dev')
    dispatcher.start()
    dispatcher.start()
    await queueLinkMail(recipient)
    dispatcher.wake()
    const mailOf = (line: Record<string, unknown>): { to?: string, text?: string } | undefined => line.mail as { to?: string, text?: string } | undefined
    await waitFor('the mail in the log', () => lines.some((line) => mailOf(line)?.to === recipient && line.level === 20))
    assert.equal(lines.filter((line) => line.level === 40 && /TOLLBOOTH_SMTP_URL is unset/.test(String(line.msg))).length, 1, 'warned once')
    const text = String(mailOf(lines.find((line) => mailOf(line)?.to === recipient && line.level === 20) ?? {})?.text)
    const token = /verify-email\?token=([A-Za-z0-9_-]+)/.exec(text)?.[1] ?? ''
    assert.deepEqual(await accountTokens(recipient), [{ hash: sha256(token), live: true }], 'a live link, made for the log')
    const named = lines.filter((line) => mailOf(line)?.to === recipient && Number(line.level) > 20)
    assert.equal(named.length, 1, 'named once at info')
    assert.ok(!JSON.stringify(lines.filter((line) => Number(line.level) > 20)).includes(token), 'no line above debug holds the link')
    const row = await status(recipient)
    assert.equal(row?.status, 'logged')
    assert.ok(!row?.body_text?.includes(token), 'the outbox does not keep it')
    await waitFor('the run over', () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length === timersBefore + 1)
    await dispatcher.close()
    assert.equal(process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length, timersBefore, 'no timer left')
  })

  it('without SMTP in a deployment (logLinks false): names each mail in the log, makes no link, and keeps no text', async () => {
    const { logger, lines } = capturingLogger('debug')
    const dispatcher = new MailDispatcher({ db: db.pool, log: logger, transport: undefined, logLinks: false, maxAttempts: 3, retryDelayMs: 10, pollIntervalMs: 60_000 })
    const recipient = uniqueEmail('deployed')
    try {
      dispatcher.start()
      const standIn = await queueLinkMail(recipient)
      dispatcher.wake()
      await waitFor('the mail named in the log', () => lines.some((line) => (line.mail as { to?: string } | undefined)?.to === recipient))
      const warning = lines.find((line) => line.level === 40 && /TOLLBOOTH_SMTP_URL is unset/.test(String(line.msg)))
      assert.match(String(warning?.msg), /links are not logged/)
      const named = lines.filter((line) => (line.mail as { to?: string } | undefined)?.to === recipient)
      assert.equal(named.length, 1)
      assert.deepEqual(Object.keys(named[0]?.mail as object).sort(), ['id', 'kind', 'subject', 'to'])
      assert.ok(!JSON.stringify(lines).includes('token='), 'no line holds a link')
      assert.deepEqual(await accountTokens(recipient), [{ hash: standIn, live: true }], 'no token was made: only the stand-in, which no token matches')
      const row = await status(recipient)
      assert.equal(row?.status, 'logged')
      assert.equal(row?.body_text, null, 'no text kept')
    } finally {
      await dispatcher.close()
    }
  })
})

describe('a service without SMTP', () => {
  it('with DATABASE_URL names the registration mail in its log, never its link; with TOLLBOOTH_MAIL_LOG_LINKS the link is there, at debug level only', async () => {
    for (const logLinks of [false, true]) {
      const { logger, lines } = capturingLogger('debug')
      const service = await startTestService({ logger, config: logLinks ? { mailLogLinks: true } : {} })
      try {
        const { email } = await registerUser(service)
        const mailTo = (line: Record<string, unknown>): boolean => (line.mail as { to?: string } | undefined)?.to === email
        await waitFor('the mail in the log', () => lines.some((line) => mailTo(line) && (!logLinks || line.level === 20)))
        assert.ok(!JSON.stringify(lines.filter((line) => Number(line.level) > 20)).includes('verify-email?token='), 'no link in any line above debug')
        const text = lines.find((line) => mailTo(line) && line.level === 20)?.mail as { text?: string } | undefined
        if (logLinks) assert.match(String(text?.text), /verify-email\?token=/)
        else assert.ok(text === undefined && !JSON.stringify(lines).includes('verify-email?token='), 'no link in any line')
      } finally {
        await service.close()
      }
    }
  })
})
