/**
 * The account page in real headless Chromium, against a real service and PostgreSQL: a person
 * registers, adds a passkey (the DevTools protocol's virtual authenticator) and signs in with it,
 * no email typed; enrols TOTP from the secret the page showed and signs in with password and code;
 * spends a recovery code once, and sees the second use refused with its code. Every step goes
 * through the page's labelled controls, as a keyboard or screen reader user reaches them.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { TOTP, URI } from 'otpauth'
import type { Browser, Page } from 'playwright-core'
import { freePort, startTestService, uniqueEmail, type TestService } from '../helpers/service.js'
import { movableWallClock, stepMs } from '../helpers/factors/second-factor.js'
import { addVirtualAuthenticator, launchChromium, pageAction, type PageOutcome } from '../helpers/chromium.js'

/** Generous: the machine is shared, and a browser's first navigation may wait for a core. */
const stepTimeoutMs = 30_000

/** Triggers one of the page's actions and waits for it to end. */
async function act (page: Page, trigger: () => Promise<void>): Promise<PageOutcome> {
  return await pageAction(page, trigger, stepTimeoutMs)
}

function assertDone (outcome: PageOutcome, state: string, what: string): void {
  assert.equal(outcome.kind, 'info', `${what}: ${outcome.text}`)
  assert.equal(outcome.state, state, `${what}: the page's state`)
}

describe('the account page in headless Chromium', () => {
  const clock = movableWallClock()
  let service: TestService
  let browser: Browser
  /** The service's port, set before it starts: the public URL names it. */
  let port: number
  /** The page's origin: localhost (a secure context over http, and a valid relying party id), the service's port. */
  let origin: string

  before(async () => {
    port = await freePort()
    origin = `http://localhost:${port}`
    // The development defaults, as `npm start` has them: the public URL on the loopback address, the
    // relying party derived from it (localhost), no passkey setting.
    service = await startTestService({ port, now: clock.now, config: { accountPage: true, publicUrl: `http://127.0.0.1:${port}` } })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await service?.close()
  })

  /** What went wrong in a page: uncaught errors, and console errors (a policy violation is one). */
  const pageFaults: string[] = []

  async function openPage (url = `${origin}/account`): Promise<Page> {
    const context = await browser.newContext()
    const page = await context.newPage()
    page.on('pageerror', (error) => { pageFaults.push(`uncaught: ${error.message}`) })
    page.on('console', (message) => { if (message.type() === 'error') pageFaults.push(`console: ${message.text()}`) })
    page.setDefaultTimeout(stepTimeoutMs)
    await page.goto(url)
    await page.waitForSelector('body[data-ready]')
    return page
  }

  async function register (page: Page, email: string, password: string): Promise<void> {
    const form = page.getByRole('region', { name: 'Create an account', exact: true })
    await form.getByLabel('Email', { exact: true }).fill(email)
    await form.getByLabel('Password', { exact: true }).fill(password)
    assertDone(await act(page, async () => { await form.getByRole('button', { name: 'Create the account' }).click() }), 'signed-in', 'register')
    assert.equal(await page.locator('#account-email').textContent(), email)
  }

  async function signOut (page: Page): Promise<void> {
    assertDone(await act(page, async () => { await page.getByRole('button', { name: 'Sign out' }).click() }), 'signed-out', 'sign out')
    assert.equal(await page.evaluate('localStorage.length + sessionStorage.length'), 0, 'the tab stored nothing')
  }

  async function passwordStep (page: Page, email: string, password: string): Promise<PageOutcome> {
    const signIn = page.getByRole('region', { name: 'Sign in', exact: true })
    await signIn.getByLabel('Email', { exact: true }).fill(email)
    await signIn.getByLabel('Password', { exact: true }).fill(password)
    // By keyboard: Enter in the password field submits its form.
    return await act(page, async () => { await signIn.getByLabel('Password', { exact: true }).press('Enter') })
  }

  /** The id of the element that has the focus: where a keyboard or screen reader user is after an action. */
  async function focused (page: Page): Promise<string> {
    return await page.evaluate('document.activeElement?.id ?? ""')
  }

  async function secondStep (page: Page, method: 'a code from your authenticator app' | 'a recovery code', code: string): Promise<PageOutcome> {
    await page.getByLabel(method).check()
    await page.getByLabel('Code', { exact: true }).fill(code)
    return await act(page, async () => { await page.getByLabel('Code', { exact: true }).press('Enter') })
  }

  it('registers, adds a passkey, signs out, and signs in with the passkey with no email typed', async () => {
    const page = await openPage()
    const authenticator = await addVirtualAuthenticator(page)
    const email = uniqueEmail('page-passkey')
    await register(page, email, 'correct horse battery staple')

    await page.getByLabel('Name of the new passkey (optional)').fill('Virtual authenticator')
    const added = await act(page, async () => { await page.getByRole('button', { name: 'Add a passkey' }).click() })
    assertDone(added, 'signed-in', 'add a passkey')
    assert.match(await page.locator('#passkey-list').textContent() ?? '', /Virtual authenticator/)
    const [credential, ...others] = await authenticator.credentials()
    assert.equal(others.length, 0)
    assert.equal(credential?.isResidentCredential, true, 'a discoverable credential')
    assert.equal(credential?.rpId, 'localhost')
    const { rows } = await service.db.pool.query('SELECT count(*)::int AS n FROM passkeys p JOIN users u ON u.id = p.user_id WHERE u.email = $1', [email])
    assert.equal(rows[0].n, 1, 'the service keeps it')

    await signOut(page)
    assert.equal(await page.locator('#sign-in-email').inputValue(), '', 'no email typed')
    const signedIn = await act(page, async () => { await page.getByRole('button', { name: 'Sign in with a passkey' }).click() })
    assertDone(signedIn, 'signed-in', 'sign in with the passkey')
    assert.equal(await page.locator('#account-email').textContent(), email, 'the passkey named the account')
    assert.match(await page.locator('#account-amr').textContent() ?? '', /^(hwk|swk), user, mfa$/)
    const [used] = await authenticator.credentials()
    assert.ok((used?.signCount ?? 0) > (credential?.signCount ?? 0), 'the authenticator signed the sign-in')
    await page.context().close()
    assert.deepEqual(pageFaults.splice(0), [], 'no script error, no policy violation')
  })

  it('enrols TOTP from the secret the page shows, then signs in with password and code; a recovery code works once and only once', async () => {
    const page = await openPage()
    const email = uniqueEmail('page-totp')
    const password = 'correct horse battery staple'
    await register(page, email, password)

    const begun = await act(page, async () => { await page.getByRole('button', { name: 'Set up an authenticator app' }).click() })
    assertDone(begun, 'signed-in', 'start TOTP')
    const secret = await page.locator('#totp-secret').textContent() ?? ''
    const uri = await page.locator('#totp-uri').getAttribute('href') ?? ''
    assert.equal(await page.locator('#totp-uri').textContent(), uri, 'the otpauth URI shown as text too')
    const totp = URI.parse(uri)
    assert.ok(totp instanceof TOTP, uri)
    assert.equal(totp.secret.base32, secret, 'the URI carries the secret shown')
    await page.getByLabel('Code from the app').fill(totp.generate({ timestamp: clock.now() }))
    const confirmed = await act(page, async () => { await page.getByRole('button', { name: 'Confirm' }).click() })
    assertDone(confirmed, 'signed-in', 'confirm TOTP')
    const recoveryCodes = await page.locator('#recovery-code-list li').allTextContents()
    assert.equal(recoveryCodes.length, 10)
    assert.equal(await page.locator('#totp-secret').textContent(), '', 'the secret is shown once, and gone once confirmed')
    await page.getByRole('button', { name: 'I have kept them' }).click()
    assert.equal(await page.locator('#recovery-code-list li').count(), 0, 'the codes are shown once')
    await signOut(page)

    // The confirmation spent this step's code: the next password sign-in types the next step's.
    clock.advance(stepMs)
    const asked = await passwordStep(page, email, password)
    assertDone(asked, 'second-step', 'the password step')
    assert.equal(await focused(page), 'second-step-heading', 'the focus moves to the second step')
    const withCode = await secondStep(page, 'a code from your authenticator app', totp.generate({ timestamp: clock.now() }))
    assertDone(withCode, 'signed-in', 'password and TOTP code')
    assert.equal(await focused(page), 'account-heading', 'the focus moves to the account')
    assert.equal(await page.locator('#account-amr').textContent(), 'pwd, otp, mfa')
    await signOut(page)

    const [recoveryCode = '', anotherCode = ''] = recoveryCodes
    assertDone(await passwordStep(page, email, password), 'second-step', 'the password step')
    assertDone(await secondStep(page, 'a recovery code', recoveryCode), 'signed-in', 'password and recovery code')
    assert.match(await page.locator('#totp-state').textContent() ?? '', /Recovery codes left: 9\./)
    await signOut(page)

    assertDone(await passwordStep(page, email, password), 'second-step', 'the password step')
    const again = await secondStep(page, 'a recovery code', recoveryCode)
    assert.deepEqual([again.kind, again.code, again.state], ['error', 'SECOND_FACTOR_INVALID', 'second-step'], again.text)
    assert.equal(await focused(page), 'second-step-code', 'the refused code is selected, for typing another')
    assert.match(again.text, /SECOND_FACTOR_INVALID/, 'the refusal\'s code is shown on the page')
    assert.ok(await page.getByRole('status').filter({ hasText: 'SECOND_FACTOR_INVALID' }).isVisible(), 'in the live region')
    const other = await secondStep(page, 'a recovery code', anotherCode)
    assertDone(other, 'signed-in', 'another recovery code, on the same challenge')
    await page.context().close()
    // The refused code's 401 is the one console error a page gets (Chromium logs failed fetches).
    assert.deepEqual(pageFaults.splice(0).filter((fault) => !/status of 401/.test(fault)), [], 'no script error, no policy violation')
  })

  it('with TOLLBOOTH_SECOND_FACTOR=required, a password sign-in without a factor enrols TOTP on the way and shows the recovery codes', async () => {
    const requiredPort = await freePort()
    const required = await startTestService({ port: requiredPort, now: clock.now, config: { accountPage: true, publicUrl: `http://127.0.0.1:${requiredPort}`, secondFactor: 'required' } })
    try {
      const page = await openPage(`http://localhost:${requiredPort}/account`)
      const email = uniqueEmail('page-required')
      const password = 'correct horse battery staple'
      await register(page, email, password)
      await signOut(page)
      const asked = await passwordStep(page, email, password)
      assertDone(asked, 'enrolment', 'the password step')
      assert.equal(await focused(page), 'totp-enrolment-heading', 'the focus moves to the enrolment')
      const totp = URI.parse(await page.locator('#totp-uri').getAttribute('href') ?? '')
      await page.getByLabel('Code from the app').fill(totp.generate({ timestamp: clock.now() }))
      const done = await act(page, async () => { await page.getByRole('button', { name: 'Confirm' }).click() })
      assertDone(done, 'signed-in', 'the first code completes the sign-in')
      assert.equal(await page.locator('#account-amr').textContent(), 'pwd, otp, mfa')
      assert.equal(await page.locator('#recovery-code-list li').count(), 10, 'the recovery codes, shown once')
      assert.equal(await focused(page), 'recovery-codes-heading')
      await page.context().close()
      assert.deepEqual(pageFaults.splice(0), [], 'no script error, no policy violation')
    } finally {
      await required.close()
    }
  })

  it('opened at the loopback address, points to the page by name, where passkeys work', async () => {
    const page = await openPage(`http://127.0.0.1:${port}/account`)
    const link = page.getByRole('link', { name: `${origin}/account` })
    assert.ok(await link.isVisible(), 'the note and its link are shown')
    assert.equal(await link.getAttribute('href'), `${origin}/account`)
    await page.context().close()
    assert.deepEqual(pageFaults.splice(0), [], 'no script error, no policy violation')
  })
})
