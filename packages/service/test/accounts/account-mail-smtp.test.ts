/**
 * A service with TOLLBOOTH_SMTP_URL, against the real test server (test/helpers/smtp.ts), which
 * offers no STARTTLS: the registration's mail is not sent in clear, the failure is logged and the
 * mail kept for a retry; with TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK it is sent, within the
 * mailbox bound the settings give.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { capturingLogger, registerUser, startTestService, type TestService } from '../helpers/service.js'
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js'
import { waitFor } from '../helpers/wait.js'

describe('a service sending through an SMTP server that offers no STARTTLS', () => {
  let smtp: TestSmtpServer
  let service: TestService
  const { logger, lines } = capturingLogger('info')
  before(async () => {
    smtp = await startSmtpServer()
    service = await startTestService({ logger, config: { smtpUrl: smtp.url, publicUrl: 'https://app.example.com' } })
  })
  after(async () => {
    await service?.close()
    await smtp?.close()
  })

  it('sends nothing in clear: the mail stays pending, its failure logged, for a retry', async () => {
    const { email } = await registerUser(service)
    const row = async (): Promise<{ status: string, attempts: number, last_error: string | null } | undefined> =>
      (await service.db.pool.query('SELECT status, attempts, last_error FROM mail_outbox WHERE recipient = $1', [email])).rows[0]
    await waitFor('the first attempt', async () => ((await row())?.attempts ?? 0) >= 1 && (await row())?.last_error !== null)
    const failed = await row()
    assert.equal(failed?.status, 'pending', 'kept for a retry')
    assert.match(failed?.last_error ?? '', /STARTTLS/)
    assert.deepEqual(smtp.mailFrom, [], 'no transaction begun in clear')
    assert.equal(smtp.messages.length, 0)
    assert.ok(lines.some((line) => line.msg === 'mail not sent; will retry' && line.level === 40 && /STARTTLS/.test(String(line.reason))))
  })
})

describe('a service allowed plaintext to its loopback SMTP server', () => {
  it('sends the mail in clear, and bounds a mailbox as TOLLBOOTH_MAIL_THROTTLE_MAILBOX_MAILS says', async () => {
    const smtp = await startSmtpServer()
    const service = await startTestService({ config: { smtpUrl: smtp.url, smtpAllowPlaintextLoopback: true, mailThrottleMailboxMails: 2, publicUrl: 'https://app.example.com' } })
    try {
      const local = `wired${process.pid}x${Date.now()}`
      for (const i of [1, 2, 3]) await registerUser(service, { email: `${local}+${i}@example.com` })
      await waitFor('two verification mails', () => smtp.messages.length === 2)
      const { rows } = await service.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM mail_outbox WHERE kind = 'verify_email' AND recipient LIKE $1", [`${local}+%`])
      assert.equal(rows[0]?.n, 2, 'the third variant\'s mail is not queued')
    } finally {
      await service.close()
      await smtp.close()
    }
  })
})
