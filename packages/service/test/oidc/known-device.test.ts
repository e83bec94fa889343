/**
 * The lockout attack against a sign-in through the OpenID Connect provider: a browser that has
 * signed in there keeps a device token (a cookie on the provider's path) and is judged by its own
 * failures, so wrong passwords sent by someone else for the account never keep it out, while a
 * browser the account has never seen meets the account's delay. The flow is walked over HTTP
 * (oidc-walk.ts).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { addClient } from '../../src/oidc/index.js'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'
import { CookieJar, follow, formAction, step, type WalkResponse } from '../helpers/oidc-walk.js'
import { registerUser, request } from '../helpers/service.js'

const redirectUri = 'http://127.0.0.1:9/callback'

describe('a browser that signed in through the provider is a known device', () => {
  let service: OidcTestService
  let clientId: string

  before(async () => {
    service = await startOidcService()
    clientId = (await addClient(service.db.pool, { clientId: undefined, name: 'Known device app', redirectUris: [redirectUri], postLogoutRedirectUris: [], authMethod: 'none', jwks: undefined, firstParty: true })).clientId
  })
  after(async () => { await service?.close() })

  /** One sign-in in `jar`'s browser: the answer to the sign-in form, and where the browser arrived. */
  async function signIn (jar: CookieJar, email: string, password: string): Promise<{ posted: WalkResponse, arrivedAt?: URL }> {
    const authorize = new URL(`${service.issuer}/auth`)
    const params = { client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: 'openid', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256', state: 'known-device' }
    for (const [name, value] of Object.entries(params)) authorize.searchParams.set(name, value)
    const walked = await follow(jar, authorize.href, service.url)
    assert.ok(walked.page !== undefined, 'the sign-in page')
    const posted = await step(jar, formAction(walked.page.text, service.url), { email, password })
    if (posted.status !== 303) return { posted }
    return { posted, arrivedAt: (await follow(jar, posted.location ?? '', service.url)).arrivedAt }
  }

  it('the owner\'s browser signs in with the right password while the account is throttled for everyone else', async () => {
    const owner = await registerUser(service)
    const ownersBrowser = new CookieJar()
    const first = await signIn(ownersBrowser, owner.email, owner.password)
    assert.ok(first.arrivedAt?.href.startsWith(redirectUri), 'the first sign-in arrives at the client')
    const setCookies = first.posted.headers.getSetCookie().filter((line) => line.startsWith('tollbooth_device='))
    assert.equal(setCookies.length, 1, `one device cookie: ${first.posted.headers.getSetCookie().join(' | ')}`)
    for (const attribute of ['Path=/oidc', 'HttpOnly', 'SameSite=Strict']) assert.ok(setCookies[0]?.split('; ').includes(attribute), `${attribute} in ${setCookies[0]}`)

    // Someone else guesses through the API until the account is throttled for unknown clients.
    for (let guess = 0; guess < 5; guess++) {
      assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email: owner.email, password: `guess ${guess}` } })).status, 401)
    }
    assert.equal((await request(service, 'POST', '/api/v1/auth/login', { body: { email: owner.email, password: owner.password } })).status, 429, 'the account is throttled for an unknown client')

    const stranger = await signIn(new CookieJar(), owner.email, owner.password)
    assert.equal(stranger.posted.status, 429, 'a browser the account has never seen meets the account\'s delay')
    assert.ok(Number(stranger.posted.headers.get('retry-after')) >= 1)

    // The owner comes back later: the provider's session is over, the device cookie kept.
    for (let again = 0; again < 3; again++) {
      const returning = new CookieJar()
      returning.take(new Headers([['set-cookie', setCookies[0] ?? '']]))
      const known = await signIn(returning, owner.email, owner.password)
      assert.equal(known.posted.status, 303, `sign-in ${again + 1} of the owner's known browser: ${known.posted.text.slice(0, 200)}`)
      assert.ok(known.arrivedAt?.href.startsWith(redirectUri), `arrived at ${String(known.arrivedAt)}`)
    }
  })
})
