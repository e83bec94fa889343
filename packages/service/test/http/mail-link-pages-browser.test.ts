/**
 * The pages a mail's link opens, in real headless Chromium against a real service and PostgreSQL:
 * the verification link confirms the address only when the button is pressed (opening the link
 * spends nothing), takes the token out of the address bar, and a second press of a used link says
 * so; the reset link sets a new password, refuses two different ones, and the new password signs in.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { freePort, registerUser, request, startTestService, type TestService } from '../helpers/service.js'
import { linkToken, logMailbox, type LogMailbox } from '../helpers/smtp.js'
import { launchChromium, pageAction, type PageOutcome } from '../helpers/chromium.js'

/** Generous: the machine is shared, and a browser's first navigation may wait for a core. */
const stepTimeoutMs = 30_000

/** Presses the page's one button and waits for its action to end. */
async function submit (page: Page): Promise<PageOutcome> {
  return await pageAction(page, async () => { await page.getByRole('button').click() }, stepTimeoutMs)
}

/** Opens a mail's link and waits for its script to have read the token. */
async function open (browser: Browser, link: string): Promise<Page> {
  const page = await browser.newPage()
  await page.goto(link, { timeout: stepTimeoutMs })
  await page.waitForSelector('body[data-state]', { state: 'attached', timeout: stepTimeoutMs })
  return page
}

describe('the mail-link pages in headless Chromium', () => {
  let mailbox: LogMailbox
  let service: TestService
  let browser: Browser
  let origin: string

  before(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    mailbox = logMailbox()
    // The development defaults, as `npm start` has them: the links point at this service's own pages.
    service = await startTestService({ port, logger: mailbox.logger, config: { accountPage: true, publicUrl: origin, mailLogLinks: true, mailPollIntervalMs: 100 } })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await service?.close()
  })

  async function verified (email: string): Promise<boolean> {
    const { rows } = await service.db.pool.query<{ verified: boolean }>('SELECT email_verified_at IS NOT NULL AS verified FROM users WHERE email = $1', [email])
    return rows[0]?.verified ?? false
  }

  it('the verification link: opening it spends nothing, the button confirms the address, a used link says so', async () => {
    const { email } = await registerUser(service)
    const mail = await mailbox.waitForMail('the verification mail', (candidate) => candidate.to.includes(email) && candidate.text.includes('/verify-email?token='))
    const token = linkToken(mail, 'verify-email')
    const link = `${origin}/verify-email?token=${token}`

    const page = await open(browser, link)
    assert.equal(await page.evaluate('location.href'), `${origin}/verify-email`, 'the token is out of the address bar')
    assert.equal(await verified(email), false, 'opening the link confirms nothing')
    const done = await submit(page)
    assert.equal(done.kind, 'info', done.text)
    assert.equal(done.state, 'done')
    assert.match(done.text, /confirmed/)
    assert.equal(await verified(email), true)
    assert.equal(await page.getByRole('link', { name: 'Sign in' }).getAttribute('href'), '/account')
    await page.close()

    const again = await open(browser, link)
    const used = await submit(again)
    assert.equal(used.kind, 'error')
    assert.equal(used.code, 'ACCOUNT_TOKEN_INVALID')
    assert.match(used.text, /used, expired/)
    await again.close()
  })

  it('the reset link: two different passwords are refused before any request, the new password then signs in and the old one does not', async () => {
    const { email, password } = await registerUser(service)
    assert.equal((await request(service, 'POST', '/api/v1/auth/password/forgot', { body: { email } })).status, 202)
    const mail = await mailbox.waitForMail('the reset mail', (candidate) => candidate.to.includes(email) && candidate.text.includes('/reset-password?token='))
    const page = await open(browser, `${origin}/reset-password?token=${linkToken(mail, 'reset-password')}`)
    assert.equal(await page.evaluate('location.href'), `${origin}/reset-password`)
    const newPassword = 'a new and long enough passphrase'

    await page.getByLabel('New password').fill(newPassword)
    await page.getByLabel('The same password again').fill(`${newPassword}!`)
    const differ = await submit(page)
    assert.equal(differ.code, 'PASSWORDS_DIFFER', differ.text)
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).status, 200, 'nothing changed yet')

    await page.getByLabel('The same password again').fill(newPassword)
    const done = await submit(page)
    assert.equal(done.kind, 'info', done.text)
    assert.equal(done.state, 'done')
    await page.close()
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: newPassword } })).status, 200)
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).status, 401)
  })

  it('a link without its token says to open the mail\'s link again, and offers no button', async () => {
    const page = await open(browser, `${origin}/verify-email`)
    assert.equal(await page.evaluate('document.body.dataset.state'), 'no-token')
    assert.equal(await page.getByRole('button').count(), 0)
    assert.ok(await page.getByText('carries no token').isVisible())
    await page.close()
  })
})
