/**
 * The mail settings checked at start: where links point (TOLLBOOTH_PUBLIC_URL, required with
 * DATABASE_URL, https with NODE_ENV=production), how SMTP may be spoken, and the mailbox bound.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'

const deployed = { DATABASE_URL: 'postgres://u:p@db.internal/tollbooth', TOLLBOOTH_KEY_ENCRYPTION_KEY: 'ab'.repeat(32) }

/** A CONFIG_INVALID that names `field` and says what `message` matches. */
function refusal (field: string, message: RegExp): (err: { code?: string, field?: string, message: string }) => boolean {
  return (err) => {
    assert.equal(err.code, 'CONFIG_INVALID')
    assert.equal(err.field, field)
    assert.match(err.message, message)
    return true
  }
}

describe('TOLLBOOTH_PUBLIC_URL', () => {
  it('is required with DATABASE_URL, refused at start naming the setting', () => {
    assert.throws(() => loadConfig({ env: deployed }), refusal('TOLLBOOTH_PUBLIC_URL', /TOLLBOOTH_PUBLIC_URL is required with DATABASE_URL/))
    assert.throws(() => loadConfig({ env: {}, overrides: { databaseUrl: deployed.DATABASE_URL, keyEncryptionKey: deployed.TOLLBOOTH_KEY_ENCRYPTION_KEY } }), refusal('TOLLBOOTH_PUBLIC_URL', /required/))
    assert.equal(loadConfig({ env: { ...deployed, TOLLBOOTH_PUBLIC_URL: 'https://app.example.com/account' } }).publicUrl, 'https://app.example.com/account')
  })

  it('defaults on the embedded database to the service itself, never a wildcard address', () => {
    assert.equal(loadConfig({ env: {} }).publicUrl, 'http://127.0.0.1:3000')
    assert.equal(loadConfig({ env: { HOST: '0.0.0.0', PORT: '8080' } }).publicUrl, 'http://localhost:8080')
    assert.equal(loadConfig({ env: { HOST: '::' } }).publicUrl, 'http://localhost:3000')
    assert.equal(loadConfig({ env: { HOST: '::1' } }).publicUrl, 'http://[::1]:3000')
    assert.equal(loadConfig({ env: { HOST: 'auth.internal' } }).publicUrl, 'http://auth.internal:3000')
  })

  it('must be https: with NODE_ENV=production, default or not', () => {
    const production = { ...deployed, NODE_ENV: 'production' }
    assert.throws(() => loadConfig({ env: { ...production, TOLLBOOTH_PUBLIC_URL: 'http://app.example.com' } }), refusal('TOLLBOOTH_PUBLIC_URL', /https:\/\/ URL with NODE_ENV=production/))
    assert.throws(() => loadConfig({ env: { NODE_ENV: 'production' } }), refusal('TOLLBOOTH_PUBLIC_URL', /https/))
    assert.equal(loadConfig({ env: { ...production, TOLLBOOTH_PUBLIC_URL: 'https://app.example.com' } }).publicUrl, 'https://app.example.com')
    assert.equal(loadConfig({ env: { ...deployed, TOLLBOOTH_PUBLIC_URL: 'http://app.example.com' } }).publicUrl, 'http://app.example.com', 'http is fine outside production')
  })

  it('must be an http or https URL', () => {
    for (const bad of ['app.example.com', 'ftp://app.example.com', 'javascript:alert(1)']) {
      assert.throws(() => loadConfig({ env: { ...deployed, TOLLBOOTH_PUBLIC_URL: bad } }), refusal('TOLLBOOTH_PUBLIC_URL', /http: or https:/), bad)
    }
  })
})

describe('TOLLBOOTH_SMTP_URL and TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK', () => {
  const withSmtp = (url: string, more: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({ TOLLBOOTH_SMTP_URL: url, ...more })

  it('refuse a query, path or fragment in the SMTP URL (nodemailer would read options from it), without echoing the URL', () => {
    for (const url of ['smtp://u:s3cret@mail.example.com:587?ignoreTLS=true', 'smtps://mail.example.com/relay', 'smtp://mail.example.com#x']) {
      assert.throws(() => loadConfig({ env: withSmtp(url) }), (err: { code?: string, field?: string, message: string }) => {
        refusal('TOLLBOOTH_SMTP_URL', /no path, query or fragment/)(err)
        assert.ok(!err.message.includes('s3cret'), 'the URL is not repeated')
        return true
      }, url)
    }
    assert.equal(loadConfig({ env: withSmtp('smtp://u:p@mail.example.com:587/') }).smtpUrl, 'smtp://u:p@mail.example.com:587/')
  })

  it('allow plaintext only to a server on this machine, and never with NODE_ENV=production', () => {
    const allow = { TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK: 'true' }
    assert.equal(loadConfig({ env: {} }).smtpAllowPlaintextLoopback, false)
    for (const url of ['smtp://127.0.0.1:1025', 'smtp://localhost:1025', 'smtp://[::1]:1025']) {
      assert.equal(loadConfig({ env: withSmtp(url, allow) }).smtpAllowPlaintextLoopback, true, url)
    }
    assert.throws(() => loadConfig({ env: withSmtp('smtp://mail.example.com:587', allow) }), refusal('TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK', /only for an SMTP server on this machine/))
    assert.throws(() => loadConfig({ env: withSmtp('smtp://127.0.0.1:1025', { ...allow, NODE_ENV: 'production', TOLLBOOTH_PUBLIC_URL: 'https://app.example.com' }) }),
      refusal('TOLLBOOTH_SMTP_ALLOW_PLAINTEXT_LOOPBACK', /refused with NODE_ENV=production/))
  })
})

describe('TOLLBOOTH_MAIL_THROTTLE_MAILBOX_MAILS', () => {
  it('is 100 an hour by default, within its range', () => {
    const config = loadConfig({ env: {} })
    assert.deepEqual([config.mailThrottleMailboxMails, config.mailThrottleWindowSeconds], [100, 3600])
    assert.equal(loadConfig({ env: { TOLLBOOTH_MAIL_THROTTLE_MAILBOX_MAILS: '20' } }).mailThrottleMailboxMails, 20)
    assert.throws(() => loadConfig({ env: { TOLLBOOTH_MAIL_THROTTLE_MAILBOX_MAILS: '0' } }), { code: 'CONFIG_INVALID' })
  })
})
