/**
 * Migration 006 on an outbox written before it: a pending mail's live link leaves its text (the
 * text keeps the link's place, the row the hash account_tokens already holds), the first send
 * replaces the token; mails no longer pending keep no text.
 */
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { migrate, readMigrations } from '../../src/db/migrate.js'
import { MailDispatcher } from '../../src/mail/dispatcher.js'
import { smtpTransport } from '../../src/mail/transport.js'
import { createTestDatabase } from '../helpers/database.js'
import { capturingLogger } from '../helpers/service.js'
import { linkToken, startSmtpServer } from '../helpers/smtp.js'
import { waitFor } from '../helpers/wait.js'

const sha256 = (token: string): Buffer => createHash('sha256').update(token).digest()
const page = 'https://app.example.com/account/reset-password'
/** A reset mail's text as the service wrote it before 006, link and all. */
const legacyText = (token: string): string => `Someone (we hope you) asked to reset the password of the account with this address. Open this link to choose a new one:\n\n${page}?token=${token}\n\nIt works once, for 1 hour, and signs out every session of the account. If you did not ask, ignore this message: your password stays as it is.\n`

describe('migration 006: the live links leave the outbox', () => {
  it('moves a pending mail\'s token out of its text; clears the text of mails no longer pending; the first send makes a new token', async () => {
    const db = await createTestDatabase({ migrate: false })
    const smtp = await startSmtpServer()
    try {
      await migrate(db.pool, readMigrations().filter((migration) => migration.version < 6))
      const { rows: [user] } = await db.pool.query<{ id: string }>("INSERT INTO users (email, password_hash) VALUES ('owner@example.com', 'x') RETURNING id")
      const token = randomBytes(32).toString('base64url')
      await db.pool.query("INSERT INTO account_tokens (token_hash, purpose, user_id, expires_at) VALUES ($1, 'password_reset', $2, now() + interval '1 hour')", [sha256(token), user?.id])
      const logged = randomBytes(32).toString('base64url')
      await db.pool.query(`INSERT INTO mail_outbox (kind, recipient, subject, body_text, status, finished_at) VALUES
        ('password_reset', 'owner@example.com', 'Reset your password', $1, 'pending', NULL),
        ('password_reset', 'dev@example.com', 'Reset your password', $2, 'logged', now()),
        ('registration_attempt', 'notice@example.com', 'Someone tried to register with your address', 'no link here', 'pending', NULL)`,
      [legacyText(token), legacyText(logged)])

      await migrate(db.pool)
      const { rows } = await db.pool.query<{ recipient: string, body_text: string | null, link_url: string | null, link_token_hash: Buffer | null }>(
        'SELECT recipient, body_text, link_url, link_token_hash FROM mail_outbox ORDER BY id')
      const [pending, finished, notice] = rows
      assert.equal(pending?.body_text, legacyText(token).replace(`${page}?token=${token}`, '{link}'))
      assert.equal(pending?.link_url, page)
      assert.ok(pending?.link_token_hash?.equals(sha256(token)), 'the hash account_tokens holds')
      assert.equal(finished?.body_text, null)
      assert.deepEqual([notice?.body_text, notice?.link_url], ['no link here', null])
      const { rows: [text] } = await db.pool.query<{ all: string }>('SELECT string_agg(row_to_json(m)::text, \' \') AS all FROM mail_outbox m')
      assert.ok(!text?.all.includes(token) && !text?.all.includes(logged), 'no token left in the outbox')

      const dispatcher = new MailDispatcher({
        db: db.pool,
        log: capturingLogger('silent').logger,
        transport: smtpTransport({ url: smtp.url, from: 'tollbooth <no-reply@example.com>', timeoutMs: 5000, allowPlaintextLoopback: true }),
        logLinks: false,
        maxAttempts: 3,
        retryDelayMs: 10,
        pollIntervalMs: 60_000,
      })
      try {
        dispatcher.start()
        dispatcher.wake()
        const mail = await smtp.waitForMail('the reset mail', (candidate) => candidate.to.includes('owner@example.com'))
        const sent = linkToken(mail, 'reset-password')
        assert.notEqual(sent, token)
        assert.ok(mail.text.includes(`${page}?token=${sent}`))
        await waitFor('the notice sent too', () => smtp.messages.some((candidate) => candidate.to.includes('notice@example.com')))
        const { rows: hashes } = await db.pool.query<{ token_hash: Buffer }>('SELECT token_hash FROM account_tokens')
        assert.deepEqual(hashes.map((row) => row.token_hash), [sha256(sent)], 'the old token is gone, the one sent is live')
      } finally {
        await dispatcher.close()
      }
    } finally {
      await smtp.close()
      await db.drop()
    }
  })
})
