/**
 * The code flow with PKCE in headless Chromium for an account with TOTP enrolled: after the
 * password the sign-in asks for the code; a wrong one is refused on the page, the right one ends
 * at the relying party (openid-client) with an ID token whose `amr` says a one-time code was
 * given; guesses are throttled per account as the API's second step is (429 + Retry-After).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import type { Browser, Page } from 'playwright-core'
import { totpCodeAt } from '../../src/accounts/factors/totp.js'
import { launchChromium } from '../helpers/chromium.js'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'
import { registeredRelyingParty, type RelyingParty } from '../helpers/relying-party.js'
import { enrolTotp, movableWallClock, stepMs } from '../helpers/factors/second-factor.js'
import { registerUser, request } from '../helpers/service.js'

/** Free failures before the throttle (the API's second step counts the same way). */
const accountFailures = 3

describe('the OpenID Connect code flow in a browser, with a second factor', () => {
  const clock = movableWallClock()
  let service: OidcTestService
  let browser: Browser
  let rp: RelyingParty

  before(async () => {
    // A minute's wait once throttled: the throttle holds however slow the machine.
    service = await startOidcService({ now: clock.now, config: { loginThrottleAccountFailures: accountFailures, loginThrottleBaseDelaySeconds: 60 } })
    rp = await registeredRelyingParty(service.db.pool, service.issuer, { name: 'Second factor app', firstParty: true })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await rp?.close()
    await service?.close()
  })

  /** A user with TOTP confirmed; the clock moved a step on, so the next code is a new one. */
  async function userWithTotp (): Promise<{ email: string, password: string, secret: Buffer, id: string, accessToken: string }> {
    const user = await registerUser(service)
    const { secret } = await enrolTotp(service, user.body.accessToken as string, clock.now)
    clock.advance(stepMs)
    return { email: user.email, password: user.password, secret, id: user.body.user.id as string, accessToken: user.body.accessToken as string }
  }

  /** From the application's login to the second-factor page. */
  async function passwordStep (page: Page, user: { email: string, password: string }): Promise<void> {
    await page.goto(`${rp.url}/login`)
    await page.getByLabel('Email').fill(user.email)
    await page.getByLabel('Password').fill(user.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { name: 'Second step' }).waitFor()
  }

  /** Sends a code on the second-factor page; the POST's status and Retry-After. */
  async function sendCode (page: Page, code: string): Promise<{ status: number, retryAfter: string | undefined }> {
    await page.getByRole('textbox', { name: 'Code' }).fill(code)
    const answered = page.waitForResponse((response) => response.request().method() === 'POST' && response.url().endsWith('/second-factor'))
    await page.getByRole('button', { name: 'Continue' }).click()
    const response = await answered
    return { status: response.status(), retryAfter: response.headers()['retry-after'] }
  }

  it('asks for the code after the password, refuses a wrong one, and the right one signs in with amr otp', async () => {
    const user = await userWithTotp()
    const context = await browser.newContext()
    const page = await context.newPage()
    await passwordStep(page, user)
    const sessionsBefore = await request(service, 'GET', '/api/v1/me/sessions', { token: user.accessToken })

    const wrong = await sendCode(page, totpCodeAt(user.secret, clock.now() + 10 * stepMs))
    assert.equal(wrong.status, 401)
    await page.getByRole('heading', { name: 'Second step' }).waitFor()
    assert.match(await page.getByRole('alert').textContent() ?? '', /\S/, 'the refusal is said on the page')
    const during = await request(service, 'GET', '/api/v1/me/sessions', { token: user.accessToken })
    assert.equal(during.body.items.length, sessionsBefore.body.items.length, 'a password alone opened no session')

    const callbackArrives = rp.nextCallback()
    await sendCode(page, totpCodeAt(user.secret, clock.now()))
    const callback = await callbackArrives
    await page.locator('#back').waitFor()
    const tokens = await client.authorizationCodeGrant(rp.config, callback.url, { pkceCodeVerifier: callback.verifier, expectedState: callback.state, expectedNonce: callback.nonce })
    const claims = tokens.claims()
    assert.equal(claims?.sub, user.id)
    assert.ok(Array.isArray(claims?.amr), `amr in the ID token: ${JSON.stringify(claims)}`)
    assert.ok(claims.amr.includes('otp') && claims.amr.includes('pwd'), `amr: ${JSON.stringify(claims.amr)}`)
    assert.equal((await client.fetchUserInfo(rp.config, tokens.access_token, user.id)).email, user.email)
    const afterSignIn = await request(service, 'GET', '/api/v1/me/sessions', { token: user.accessToken })
    assert.equal(afterSignIn.body.items.length, sessionsBefore.body.items.length + 1, 'the second step opened the session')
    await context.close()
  })

  it('throttles guesses per account: past the free failures even the right code is 429 with Retry-After, on a page saying so', async () => {
    const user = await userWithTotp()
    const context = await browser.newContext()
    const page = await context.newPage()
    await passwordStep(page, user)
    const wrongCode = totpCodeAt(user.secret, clock.now() + 10 * stepMs)
    for (let i = 0; i < accountFailures; i++) assert.equal((await sendCode(page, wrongCode)).status, 401, `guess ${i + 1}`)
    const throttled = await sendCode(page, totpCodeAt(user.secret, clock.now()))
    assert.equal(throttled.status, 429)
    assert.ok(Number(throttled.retryAfter) >= 1, `Retry-After: ${String(throttled.retryAfter)}`)
    await page.getByRole('heading', { name: 'Too many attempts' }).waitFor()
    assert.match(await page.textContent('main') ?? '', /try again in \d+ s/)
    // The API's second step counts the same failures: a fresh challenge there is throttled too.
    const login = await request(service, 'POST', '/api/v1/auth/login', { body: { email: user.email, password: user.password } })
    const api = login.status === 200 ? await request(service, 'POST', '/api/v1/auth/login/second-factor', { body: { challenge: login.body.challenge, method: 'totp', code: totpCodeAt(user.secret, clock.now()) } }) : login
    assert.deepEqual([api.status, api.body.error?.code], [429, 'TOO_MANY_ATTEMPTS'])
    await context.close()
  })
})
