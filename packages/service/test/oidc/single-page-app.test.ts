/**
 * The single-page app of examples/spa, as its guide runs it (docs/how-to/single-page-app.md):
 * its own server on a loopback origin, a public client (no secret), headless Chromium signing in
 * on tollbooth's pages, the page itself exchanging the code with its PKCE verifier at the token
 * endpoint and reading userinfo across origins, refreshing and signing out. And the CORS rule that
 * lets it: a public client's token endpoint answers the origins of its redirect URIs, no other.
 */
import assert from 'node:assert/strict'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { addClient } from '../../src/oidc/index.js'
import { packageRoot } from '../../src/paths.js'
import { launchChromium } from '../helpers/chromium.js'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'
import { freePort, registerUser, request } from '../helpers/service.js'
import { spawnUntilReady, type Spawned } from '../helpers/spawned.js'

const exampleServer = path.join(packageRoot, '..', '..', 'examples', 'spa', 'serve.mjs')

async function tokenRequest (service: OidcTestService, origin: string, body: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return await fetch(`${service.issuer}/token`, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(body).toString(),
  })
}

describe('a single-page app signs in with PKCE as a public client (examples/spa)', () => {
  let service: OidcTestService
  let browser: Browser
  let spa: Spawned
  let spaOrigin: string
  let clientId: string
  let user: Awaited<ReturnType<typeof registerUser>>

  before(async () => {
    service = await startOidcService()
    user = await registerUser(service, { name: 'Grace Hopper' })
    spaOrigin = `http://127.0.0.1:${await freePort()}`
    const added = await addClient(service.db.pool, {
      clientId: undefined,
      name: 'Single-page app',
      redirectUris: [`${spaOrigin}/`],
      postLogoutRedirectUris: [`${spaOrigin}/`],
      authMethod: 'none',
      jwks: undefined,
      firstParty: true,
    })
    assert.equal(added.secret, undefined, 'a public client has no secret')
    clientId = added.clientId
    spa = await spawnUntilReady(process.execPath, [exampleServer], {
      ...process.env, TOLLBOOTH_ISSUER: service.issuer, CLIENT_ID: clientId, PORT: new URL(spaOrigin).port,
    }, /single-page app at/)
    browser = await launchChromium()
  })

  after(async () => {
    await browser?.close()
    await spa?.stop()
    await service?.close()
  })

  it('signs in, exchanges the code from the page, reads userinfo, refreshes and signs out', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    const tokenAnswers: Array<{ status: number, allowOrigin: string | null }> = []
    page.on('response', (response) => {
      if (response.url() === `${service.issuer}/token` && response.request().method() === 'POST') {
        tokenAnswers.push({ status: response.status(), allowOrigin: response.headers()['access-control-allow-origin'] ?? null })
      }
    })
    await page.goto(`${spaOrigin}/`)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    assert.match(await page.textContent('main') ?? '', /Single-page app/)
    await page.getByLabel('Email').fill(user.email)
    await page.getByLabel('Password').fill(user.password)
    await page.getByRole('button', { name: 'Sign in' }).click()

    // Back at the app: the page exchanged the code and read userinfo itself, across origins.
    await page.getByText('Signed in.', { exact: true }).waitFor()
    assert.equal(new URL(page.url()).search, '', 'the code left the address bar')
    assert.equal(await page.textContent('#email'), user.email)
    const info = JSON.parse(await page.textContent('#userinfo') ?? '{}') as Record<string, unknown>
    assert.equal(info.sub, user.body.user.id)
    assert.equal(info.name, 'Grace Hopper')
    assert.deepEqual(tokenAnswers, [{ status: 200, allowOrigin: spaOrigin }])

    const sessions = await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken })
    assert.equal(sessions.body.items.length, 2, 'the sign-in is a tollbooth session')

    await page.getByRole('button', { name: 'Refresh the tokens' }).click()
    await page.getByText('Signed in; tokens refreshed.', { exact: true }).waitFor()
    assert.deepEqual(tokenAnswers, [{ status: 200, allowOrigin: spaOrigin }, { status: 200, allowOrigin: spaOrigin }])
    assert.equal(await page.isVisible('#error'), false)

    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('button', { name: 'Sign out' }).click() // tollbooth's confirmation page
    await page.waitForURL(`${spaOrigin}/`)
    await page.getByText('Signed out.', { exact: true }).waitFor()
    const after = await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken })
    assert.equal(after.body.items.length, 1, 'signing out ended the sign-in\'s session')
    await context.close()
  })

  it('asks a browser whose tollbooth session ended elsewhere to sign in again, and signs it in', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    const signIn = async (): Promise<void> => {
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('heading', { name: 'Sign in' }).waitFor()
      await page.getByLabel('Email').fill(user.email)
      await page.getByLabel('Password').fill(user.password)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByText('Signed in.', { exact: true }).waitFor()
    }
    await page.goto(`${spaOrigin}/`)
    await signIn()
    // The session this sign-in opened is ended from the account's own list; the browser keeps the provider's cookie.
    const sessions = await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken })
    const opened = (sessions.body.items as Array<{ id: string, current: boolean }>).filter((session) => !session.current)
    assert.equal(opened.length, 1)
    assert.equal((await request(service, 'DELETE', `/api/v1/me/sessions/${opened[0]?.id ?? ''}`, { token: user.body.accessToken })).status, 204)

    await page.goto(`${spaOrigin}/`)
    await signIn()
    assert.equal(await page.textContent('#email'), user.email)
    assert.equal(await page.isVisible('#error'), false)
    await context.close()
  })

  it('answers a public client\'s token requests from the origins of its redirect URIs only', async () => {
    const body = { grant_type: 'authorization_code', client_id: clientId, code: 'not-a-code', redirect_uri: `${spaOrigin}/`, code_verifier: 'v'.repeat(43) }
    const own = await tokenRequest(service, spaOrigin, body)
    assert.equal(own.status, 400)
    assert.equal(((await own.json()) as { error: string }).error, 'invalid_grant', 'its own origin reaches the grant check')
    assert.equal(own.headers.get('access-control-allow-origin'), spaOrigin, 'and the page may read the answer')

    const foreign = await tokenRequest(service, 'http://127.0.0.1:9', body)
    assert.equal(foreign.status, 400)
    assert.equal(((await foreign.json()) as { error: string }).error, 'invalid_request')
    assert.equal(foreign.headers.get('access-control-allow-origin'), null, 'another origin may not read it')

    const opaque = await tokenRequest(service, 'null', body)
    assert.equal(opaque.headers.get('access-control-allow-origin'), null, 'nor may an opaque origin (a sandboxed frame, a file)')
  })

  it('answers no confidential client\'s token request from a browser, even from its redirect URI\'s origin', async () => {
    const confidential = await addClient(service.db.pool, {
      clientId: undefined,
      name: 'Server app',
      redirectUris: [`${spaOrigin}/server-callback`],
      postLogoutRedirectUris: [],
      authMethod: 'client_secret_basic',
      jwks: undefined,
      firstParty: true,
    })
    const basic = Buffer.from(`${confidential.clientId}:${confidential.secret ?? ''}`).toString('base64')
    const answer = await tokenRequest(service, spaOrigin, { grant_type: 'authorization_code', code: 'not-a-code', redirect_uri: `${spaOrigin}/server-callback`, code_verifier: 'v'.repeat(43) }, { authorization: `Basic ${basic}` })
    assert.equal(answer.status, 400)
    assert.equal(((await answer.json()) as { error: string }).error, 'invalid_request')
    assert.equal(answer.headers.get('access-control-allow-origin'), null)
  })
})
