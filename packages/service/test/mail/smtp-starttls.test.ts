/**
 * SMTP is never spoken in clear unless allowed: smtp:// must upgrade with STARTTLS, so a server
 * (or anyone on the path) that offers none gets no message, and the send fails and is retried as
 * any failed send. The real test server (test/helpers/smtp.ts) offers no STARTTLS.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { enqueueMail } from '../../src/db/mail-outbox.js'
import { MailDispatcher } from '../../src/mail/dispatcher.js'
import { smtpTransport, type SmtpTransportOptions } from '../../src/mail/transport.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { capturingLogger, uniqueEmail } from '../helpers/service.js'
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js'
import { waitFor } from '../helpers/wait.js'

describe('SMTP to a server without STARTTLS', () => {
  let db: TestDatabase
  let smtp: TestSmtpServer
  before(async () => {
    db = await createTestDatabase()
    smtp = await startSmtpServer()
  })
  after(async () => {
    await smtp?.close()
    await db?.drop()
  })

  async function row (recipient: string): Promise<{ status: string, attempts: number, last_error: string | null } | undefined> {
    const { rows } = await db.pool.query('SELECT status, attempts, last_error FROM mail_outbox WHERE recipient = $1', [recipient])
    return rows[0]
  }

  /** Sends one mail through `transport` until it is sent or given up (three attempts); returns its recipient and the log. */
  async function sendOne (label: string, transport: Omit<SmtpTransportOptions, 'from' | 'timeoutMs'>): Promise<{ recipient: string, lines: Array<Record<string, unknown>> }> {
    const { logger, lines } = capturingLogger('info')
    const dispatcher = new MailDispatcher({
      db: db.pool,
      log: logger,
      transport: smtpTransport({ ...transport, from: 'tollbooth <no-reply@example.com>', timeoutMs: 5000 }),
      logLinks: false,
      maxAttempts: 3,
      retryDelayMs: 10,
      pollIntervalMs: 60_000,
    })
    const recipient = uniqueEmail(label)
    try {
      dispatcher.start()
      await enqueueMail(db.pool, { kind: 'test', recipient, subject: label, text: 'nobody on the path may read this' })
      dispatcher.wake()
      await waitFor('the mail sent or given up', async () => ['sent', 'failed'].includes((await row(recipient))?.status ?? ''))
    } finally {
      await dispatcher.close()
    }
    return { recipient, lines }
  }

  it('smtp:// is not spoken in clear: no transaction begun, the failure logged, retried, then given up', async () => {
    const { recipient, lines } = await sendOne('starttls-required', { url: smtp.url })
    assert.deepEqual(smtp.messages.filter((mail) => mail.to.includes(recipient)), [], 'nothing received')
    assert.deepEqual(smtp.mailFrom, [], 'not even MAIL FROM was sent in clear')
    const failed = await row(recipient)
    assert.equal(failed?.status, 'failed')
    assert.equal(failed?.attempts, 3)
    assert.match(failed?.last_error ?? '', /STARTTLS/)
    const retries = lines.filter((line) => line.msg === 'mail not sent; will retry')
    assert.equal(retries.length, 2)
    assert.ok(retries.every((line) => line.level === 40 && /STARTTLS/.test(String(line.reason))), JSON.stringify(retries))
    assert.ok(lines.some((line) => line.level === 50 && /given up after 3 attempt/.test(String(line.msg))))
  })

  it('smtps:// is TLS from the first byte: a server that speaks in clear gets nothing', async () => {
    const { recipient } = await sendOne('tls-first', { url: smtp.url.replace('smtp:', 'smtps:') })
    assert.equal((await row(recipient))?.status, 'failed')
    assert.deepEqual(smtp.mailFrom, [])
  })

  it('TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK: the same loopback server gets the mail in clear', async () => {
    const { recipient } = await sendOne('plaintext-allowed', { url: smtp.url, allowPlaintextLoopback: true })
    assert.equal((await row(recipient))?.status, 'sent')
    assert.equal(smtp.messages.filter((mail) => mail.to.includes(recipient)).length, 1)
  })
})
