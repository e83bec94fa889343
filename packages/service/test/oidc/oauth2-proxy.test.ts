/**
 * oauth2-proxy (the real binary, `OAUTH2_PROXY` its path) in front of an application, tollbooth its
 * OpenID Connect provider, configured as docs/how-to/oauth2-proxy.md says: headless Chromium asks
 * the proxy for a page, signs in on tollbooth's pages, and the application behind the proxy gets
 * the request with the user's headers. Without `OAUTH2_PROXY` the suite is skipped, saying so.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { markEmailVerified } from '../../src/db/index.js'
import { addClient } from '../../src/oidc/index.js'
import { launchChromium } from '../helpers/chromium.js'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'
import { freePort, registerUser, request } from '../helpers/service.js'
import { spawnUntilReady, type Spawned } from '../helpers/spawned.js'
import { pollUntil, waitFor } from '../helpers/wait.js'

const binary = process.env.OAUTH2_PROXY
const skip = binary === undefined || binary === '' ? 'OAUTH2_PROXY is not set: the path of an oauth2-proxy v7 binary runs this (docs/how-to/oauth2-proxy.md)' : false

/** What the application behind the proxy saw of a request: its path and the headers the proxy adds. */
interface Seen {
  path: string
  user: string | undefined
  email: string | undefined
  accessToken: string | undefined
}

/** The application behind the proxy: answers every request with what it saw, as JSON. */
async function startUpstream (): Promise<{ url: string, seen: Seen[], close: () => Promise<void> }> {
  const seen: Seen[] = []
  const header = (request: http.IncomingMessage, name: string): string | undefined => {
    const value = request.headers[name]
    return typeof value === 'string' ? value : undefined
  }
  const server = http.createServer((request, response) => {
    const entry = { path: request.url ?? '/', user: header(request, 'x-forwarded-user'), email: header(request, 'x-forwarded-email'), accessToken: header(request, 'x-forwarded-access-token') }
    seen.push(entry)
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(entry))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    seen,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    },
  }
}

describe('oauth2-proxy in front of an application, tollbooth its OpenID Connect provider', { skip }, () => {
  let service: OidcTestService
  let upstream: Awaited<ReturnType<typeof startUpstream>>
  let proxy: Spawned
  let proxyUrl: string
  let browser: Browser

  before(async () => {
    service = await startOidcService()
    upstream = await startUpstream()
    proxyUrl = `http://127.0.0.1:${await freePort()}`
    const added = await addClient(service.db.pool, {
      clientId: undefined,
      name: 'Behind oauth2-proxy',
      redirectUris: [`${proxyUrl}/oauth2/callback`],
      postLogoutRedirectUris: [],
      authMethod: 'client_secret_basic',
      jwks: undefined,
      firstParty: true,
    })
    // The flags of the guide; the secrets in the environment, never on a command line.
    proxy = await spawnUntilReady(binary ?? '', [
      '--provider=oidc',
      `--oidc-issuer-url=${service.issuer}`,
      `--client-id=${added.clientId}`,
      '--code-challenge-method=S256',
      '--scope=openid email profile',
      `--redirect-url=${proxyUrl}/oauth2/callback`,
      `--http-address=${new URL(proxyUrl).host}`,
      `--upstream=${upstream.url}`,
      '--email-domain=*',
      '--cookie-secure=false',
      '--skip-provider-button=true',
      '--pass-access-token=true',
      // Short here so the test sees a refresh; minutes in a deployment.
      '--cookie-refresh=2s',
      // Lets /oauth2/sign_out send the browser on to tollbooth's end-session page.
      `--whitelist-domain=${new URL(service.issuer).host}`,
    ], {
      PATH: process.env.PATH,
      OAUTH2_PROXY_CLIENT_SECRET: added.secret,
      OAUTH2_PROXY_COOKIE_SECRET: randomBytes(32).toString('base64url'),
    }, /Cookie settings/)
    // It logs nothing once it listens: its /ping answers then.
    await waitFor('oauth2-proxy to answer /ping', async () => await fetch(`${proxyUrl}/ping`).then((answer) => answer.ok, () => false))
    browser = await launchChromium()
  })

  after(async () => {
    await browser?.close()
    await proxy?.stop()
    await upstream?.close()
    await service?.close()
  })

  it('signs a user with a verified address in on tollbooth\'s page and passes the request on with the user\'s headers', { timeout: 60_000 }, async () => {
    const user = await registerUser(service, { name: 'Alan Turing' })
    await markEmailVerified(service.db.pool, user.body.user.id)
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(`${proxyUrl}/reports?year=1936`)
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    assert.match(await page.textContent('main') ?? '', /Behind oauth2-proxy/)
    await page.getByLabel('Email').fill(user.email)
    await page.getByLabel('Password').fill(user.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${proxyUrl}/reports?year=1936`)
    const seen = JSON.parse(await page.textContent('body') ?? '{}') as Seen
    assert.equal(seen.path, '/reports?year=1936')
    assert.equal(seen.email, user.email)
    assert.equal(seen.user, user.body.user.id, 'the user is the ID token\'s sub: the tollbooth user id')
    assert.ok(seen.accessToken !== undefined && seen.accessToken.length > 0, 'the provider\'s access token, for the application to call userinfo')

    // The proxy's cookie carries the sign-in: the next pages need no sign-in, and once the
    // session is older than --cookie-refresh the proxy refreshes it with the refresh token.
    const refreshed = await pollUntil('oauth2-proxy to refresh the session', async () => {
      const next = await page.goto(`${proxyUrl}/next`)
      assert.equal(next?.status(), 200)
      return JSON.parse(await page.textContent('body') ?? '{}') as Seen
    }, (next) => next.accessToken !== seen.accessToken, { intervalMs: 500 })
    assert.equal(refreshed.email, user.email)
    assert.equal(refreshed.path, '/next')

    // The proxy's sign-out alone clears its cookie: the tollbooth session stays, and the next page signs in again without a password.
    await page.goto(`${proxyUrl}/oauth2/sign_out`)
    await page.goto(`${proxyUrl}/silent`)
    await page.waitForURL(`${proxyUrl}/silent`)
    assert.equal((JSON.parse(await page.textContent('body') ?? '{}') as Seen).email, user.email)

    // Signing out of the proxy, then of tollbooth: the tollbooth session ends, the next page asks to sign in.
    const sessions = await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken })
    assert.equal(sessions.body.items.length, 2)
    await page.goto(`${proxyUrl}/oauth2/sign_out?rd=${encodeURIComponent(`${service.issuer}/session/end`)}`)
    await page.getByRole('button', { name: 'Sign out' }).click()
    await pollUntil('the tollbooth session to end', async () => await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken }), (answer) => answer.body.items.length === 1)
    await page.goto(`${proxyUrl}/again`)
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    assert.notEqual(upstream.seen.at(-1)?.path, '/again')

    // Signed in again, then that tollbooth session ended elsewhere: the proxy's next refresh is refused, and it asks to sign in.
    await page.getByLabel('Email').fill(user.email)
    await page.getByLabel('Password').fill(user.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${proxyUrl}/again`)
    const live = await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken })
    const proxied = (live.body.items as Array<{ id: string, current: boolean }>).find((session) => !session.current)
    assert.ok(proxied !== undefined)
    assert.equal((await request(service, 'DELETE', `/api/v1/me/sessions/${proxied.id}`, { token: user.body.accessToken })).status, 204)
    // Until its next refresh, the proxy may still pass a page on: only the visit that met the sign-in page is judged.
    let seenBeforeVisit = 0
    await pollUntil('oauth2-proxy to ask for a sign-in again', async () => {
      seenBeforeVisit = upstream.seen.length
      await page.goto(`${proxyUrl}/after-revocation`)
      return await page.getByRole('heading', { name: 'Sign in' }).count()
    }, (headings) => headings === 1, { intervalMs: 500 })
    assert.equal(upstream.seen.length, seenBeforeVisit, 'the visit that met the sign-in page never reached the application')
    // The browser still holds the provider's session of the ended one: signing in replaces it.
    await page.getByLabel('Email').fill(user.email)
    await page.getByLabel('Password').fill(user.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${proxyUrl}/after-revocation`)
    assert.equal((JSON.parse(await page.textContent('body') ?? '{}') as Seen).email, user.email)
    await context.close()
  })

  it('refuses a user whose address is not verified, and the application never sees the request', async () => {
    const user = await registerUser(service)
    const context = await browser.newContext()
    const page = await context.newPage()
    const before = upstream.seen.length
    await page.goto(`${proxyUrl}/unverified`)
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    await page.getByLabel('Email').fill(user.email)
    await page.getByLabel('Password').fill(user.password)
    const callback = page.waitForResponse((response) => response.url().startsWith(`${proxyUrl}/oauth2/callback`))
    await page.getByRole('button', { name: 'Sign in' }).click()
    const answer = await callback
    assert.ok(answer.status() >= 400, `the proxy refused the sign-in (${answer.status()})`)
    assert.equal(upstream.seen.length, before)
    assert.match(proxy.output(), /email in id_token \(.*\) isn't verified/, 'for its address, as its log says')
    await context.close()
  })
})
