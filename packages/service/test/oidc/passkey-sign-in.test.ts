/**
 * A passkey on the OpenID Connect provider's sign-in page, in real headless Chromium with the
 * DevTools protocol's virtual authenticator: a relying party built on openid-client starts the code
 * flow, the person presses "Use a passkey" and types no email, and the client gets an ID
 * token whose `amr` says a key signed in (two factors). A passkey answer that does not verify is
 * refused on the page, and the sign-in can go on with a password.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { addVirtualAuthenticator, launchChromium } from '../helpers/chromium.js'
import { registeredRelyingParty, type RelyingParty } from '../helpers/relying-party.js'
import { freePort, registerUser, startTestService, type TestService } from '../helpers/service.js'

/** Generous: the machine is shared, and a browser's first navigation may wait for a core. */
const stepTimeoutMs = 30_000

describe('a passkey on the OpenID Connect sign-in page', () => {
  let service: TestService
  let browser: Browser
  let rp: RelyingParty
  /** The service's origin by name: browsers take no IP address as a passkey's relying party. */
  let origin: string

  before(async () => {
    const port = await freePort()
    origin = `http://localhost:${port}`
    service = await startTestService({ port, config: { oidc: true, accountPage: true, publicUrl: origin } })
    rp = await registeredRelyingParty(service.db.pool, `${origin}/oidc`, { name: 'Passkey app', firstParty: true })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await rp?.close()
    await service?.close()
  })

  /** A browser whose virtual authenticator holds a passkey of a new account, added through the API from the service's own origin. */
  async function browserWithPasskey (): Promise<{ context: BrowserContext, page: Page, user: Awaited<ReturnType<typeof registerUser>> }> {
    const user = await registerUser(service)
    const context = await browser.newContext()
    const page = await context.newPage()
    const authenticator = await addVirtualAuthenticator(page)
    await page.goto(`${origin}/account`, { timeout: stepTimeoutMs })
    const status = await page.evaluate(`(async () => {
      const headers = { authorization: 'Bearer ${String(user.body.accessToken)}' }
      const options = await (await fetch('/api/v1/me/passkeys/options', { method: 'POST', headers })).json()
      const credential = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) })
      const added = await fetch('/api/v1/me/passkeys', { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ response: credential.toJSON() }) })
      return added.status
    })()`)
    assert.equal(status, 201, 'the passkey was added')
    assert.equal((await authenticator.credentials()).length, 1)
    return { context, page, user }
  }

  it('signs in with the passkey, no email typed: the client\'s ID token names the account and says a key signed in', async () => {
    const { context, page, user } = await browserWithPasskey()
    const callbackArrives = rp.nextCallback()
    await page.goto(`${rp.url}/login`, { timeout: stepTimeoutMs })
    await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: stepTimeoutMs })
    await page.getByRole('button', { name: 'Use a passkey' }).click()
    const callback = await callbackArrives
    const tokens = await client.authorizationCodeGrant(rp.config, callback.url, { pkceCodeVerifier: callback.verifier, expectedState: callback.state, expectedNonce: callback.nonce })
    const claims = tokens.claims()
    assert.equal(claims?.sub, user.body.user.id)
    const amr = claims?.amr as string[] | undefined
    assert.ok(amr?.includes('mfa') === true && (amr.includes('hwk') || amr.includes('swk')), `amr ${JSON.stringify(amr)}`)
    assert.equal((await client.fetchUserInfo(rp.config, tokens.access_token, user.body.user.id)).email, user.email)
    await context.close()
  })

  it('refuses a passkey answer that does not verify on the page, and the password still signs in', async () => {
    const { context, page, user } = await browserWithPasskey()
    await page.goto(`${rp.url}/login`, { timeout: stepTimeoutMs })
    await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: stepTimeoutMs })
    // A forged answer: the form posted as the script would, with an assertion no authenticator signed.
    const forged = JSON.stringify({ id: 'AAAA', rawId: 'AAAA', type: 'public-key', clientExtensionResults: {}, response: { clientDataJSON: 'AAAA', authenticatorData: 'AAAA', signature: 'AAAA' } })
    await page.evaluate(`(() => { const form = document.getElementById('passkey-form'); form.elements.response.value = ${JSON.stringify(forged)}; form.submit() })()`)
    await page.getByRole('alert').waitFor({ timeout: stepTimeoutMs })
    assert.match(await page.getByRole('alert').textContent() ?? '', /passkey/i)
    assert.ok(await page.getByRole('button', { name: 'Use a passkey' }).isVisible(), 'the page is offered again')

    const callbackArrives = rp.nextCallback()
    await page.getByLabel('Email').fill(user.email)
    await page.getByLabel('Password').fill(user.password)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    const callback = await callbackArrives
    const tokens = await client.authorizationCodeGrant(rp.config, callback.url, { pkceCodeVerifier: callback.verifier, expectedState: callback.state, expectedNonce: callback.nonce })
    assert.deepEqual(tokens.claims()?.amr, ['pwd'])
    await context.close()
  })
})
