/**
 * The OpenID Connect provider end to end: headless Chromium signs in on tollbooth's pages, a
 * relying party built on openid-client (not tollbooth's code) discovers the issuer, exchanges the
 * code with its PKCE verifier, validates the ID token against the service's JWK Set, reads
 * userinfo, refreshes (rotation, reuse detection) and logs out. Real PostgreSQL, real sockets.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import type { Browser } from 'playwright-core'
import { launchChromium } from '../helpers/chromium.js'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'
import { registeredRelyingParty, type RelyingParty } from '../helpers/relying-party.js'
import { registerUser, request } from '../helpers/service.js'

describe('the OpenID Connect code flow in a browser', () => {
  let service: OidcTestService
  let browser: Browser
  let rp: RelyingParty
  let clientId: string
  let user: Awaited<ReturnType<typeof registerUser>>

  before(async () => {
    service = await startOidcService()
    user = await registerUser(service, { name: 'Ada Lovelace' })
    rp = await registeredRelyingParty(service.db.pool, service.issuer, { name: 'Test app', firstParty: false })
    clientId = rp.config.clientMetadata().client_id
    browser = await launchChromium()
  })

  after(async () => {
    await browser?.close()
    await rp?.close()
    await service?.close()
  })

  it('publishes a discovery document for the code flow with S256 PKCE only, and the service\'s own JWK Set', async () => {
    const discovery = await request(service, 'GET', '/oidc/.well-known/openid-configuration')
    assert.equal(discovery.status, 200)
    assert.equal(discovery.body.issuer, service.issuer)
    assert.deepEqual(discovery.body.response_types_supported, ['code'])
    assert.deepEqual(discovery.body.code_challenge_methods_supported, ['S256'])
    assert.deepEqual(discovery.body.id_token_signing_alg_values_supported, ['EdDSA'])
    assert.equal(discovery.body.userinfo_endpoint, `${service.issuer}/me`)
    assert.equal(discovery.body.end_session_endpoint, `${service.issuer}/session/end`)
    assert.ok(!discovery.body.grant_types_supported.includes('password') && !discovery.body.grant_types_supported.includes('implicit'))
    assert.equal(discovery.body.registration_endpoint, undefined, 'no dynamic registration')
    assert.equal(discovery.body.jwks_uri, `${service.issuer}/jwks`)
    assert.equal(discovery.body.token_endpoint, `${service.issuer}/token`)
    const providerKeys = await request(service, 'GET', '/oidc/jwks')
    const serviceKeys = await request(service, 'GET', '/.well-known/jwks.json')
    assert.deepEqual(providerKeys.body, serviceKeys.body)
    assert.ok(serviceKeys.body.keys.length > 0)
  })

  it('signs in on tollbooth\'s pages, asks consent, and the client validates its tokens, reads userinfo, refreshes and logs out', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(`${rp.url}/login`)
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    assert.match(await page.textContent('main') ?? '', /Test app/)
    await page.getByLabel('Email').fill(user.email)
    await page.getByLabel('Password').fill(user.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { name: 'Allow access?' }).waitFor()
    const callbackArrives = rp.nextCallback()
    await page.getByRole('button', { name: 'Allow' }).click()
    const callback = await callbackArrives
    await page.locator('#back').waitFor()

    const tokens = await client.authorizationCodeGrant(rp.config, callback.url, { pkceCodeVerifier: callback.verifier, expectedState: callback.state, expectedNonce: callback.nonce })
    const claims = tokens.claims()
    assert.equal(claims?.sub, user.body.user.id)
    assert.equal(claims?.iss, service.issuer)
    // Validated again, independently, against the JWK Set the API publishes.
    const verified = await jwtVerify(tokens.id_token ?? '', createRemoteJWKSet(new URL(`${service.url}/.well-known/jwks.json`)), { issuer: service.issuer, audience: clientId })
    assert.equal(verified.protectedHeader.alg, 'EdDSA')

    const info = await client.fetchUserInfo(rp.config, tokens.access_token, user.body.user.id)
    assert.equal(info.email, user.email)
    assert.equal(info.name, 'Ada Lovelace')

    // The sign-in is a tollbooth session: it is listed beside the registration's.
    const sessions = await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken })
    assert.equal(sessions.status, 200)
    assert.equal(sessions.body.items.length, 2)

    // Refresh rotates; the spent refresh token presented again revokes the grant.
    assert.ok(tokens.refresh_token !== undefined)
    const refreshed = await client.refreshTokenGrant(rp.config, tokens.refresh_token)
    assert.ok(refreshed.refresh_token !== undefined && refreshed.refresh_token !== tokens.refresh_token)
    assert.equal((await client.fetchUserInfo(rp.config, refreshed.access_token, user.body.user.id)).sub, user.body.user.id)

    // RP-initiated logout ends the provider's session and the tollbooth session with it.
    const logoutUrl = client.buildEndSessionUrl(rp.config, { id_token_hint: refreshed.id_token ?? tokens.id_token ?? '', post_logout_redirect_uri: rp.postLogoutRedirectUri })
    const loggedOut = rp.nextLogout()
    await page.goto(logoutUrl.href)
    await page.getByRole('button', { name: 'Sign out' }).click()
    await loggedOut
    const after = await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken })
    assert.equal(after.body.items.length, 1, 'the OIDC sign-in\'s session ended')
    await assert.rejects(client.fetchUserInfo(rp.config, refreshed.access_token, user.body.user.id), 'its access token no longer works')
    await context.close()
  })
})
