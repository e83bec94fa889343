/**
 * What the provider refuses, per OAuth 2.0 / OpenID Connect: a redirect URI not registered
 * exactly, PKCE missing, plain or wrong, a code used twice (what it issued revoked), a rotated
 * refresh token replayed (the grant revoked), request objects signed with `none` or HS256, an
 * unknown interaction; and a session ended through /me/sessions ending the provider's tokens.
 * The flow is walked over HTTP (oidc-walk.ts); the client is openid-client.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import { SignJWT } from 'jose'
import { fetch as undiciFetch } from 'undici'
import { addClient } from '../../src/oidc/index.js'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'
import { authorizationRequest, CookieJar, step, walkSignIn } from '../helpers/oidc-walk.js'
import { registerUser, request } from '../helpers/service.js'

const redirectUri = 'http://127.0.0.1:9/callback'

describe('the OpenID Connect provider refuses', () => {
  let service: OidcTestService
  let config: client.Configuration
  let clientId: string
  let secret: string
  let user: Awaited<ReturnType<typeof registerUser>>

  before(async () => {
    service = await startOidcService()
    user = await registerUser(service)
    const added = await addClient(service.db.pool, { clientId: undefined, name: 'Refused app', redirectUris: [redirectUri], postLogoutRedirectUris: [], authMethod: 'client_secret_basic', jwks: undefined, firstParty: true })
    clientId = added.clientId
    secret = added.secret ?? ''
    config = await client.discovery(new URL(service.issuer), clientId, undefined, client.ClientSecretBasic(secret), { execute: [client.allowInsecureRequests] })
  })
  after(async () => { await service?.close() })

  const authorizationUrl = async (extra: Record<string, string> = {}): ReturnType<typeof authorizationRequest> => await authorizationRequest(config, redirectUri, extra)
  /** Signs in (a new jar: a new browser) and returns the callback with its code. */
  const signIn = async (): ReturnType<typeof walkSignIn> => await walkSignIn(service.url, config, redirectUri, user)

  async function exchange (signedIn: Awaited<ReturnType<typeof signIn>>, verifier = signedIn.verifier): Promise<client.TokenEndpointResponse & client.TokenEndpointResponseHelpers> {
    return await client.authorizationCodeGrant(config, signedIn.callback, { pkceCodeVerifier: verifier, expectedState: signedIn.state, expectedNonce: signedIn.nonce })
  }

  async function rejectsWith (promise: Promise<unknown>, error: string): Promise<void> {
    await assert.rejects(promise, (err: unknown) => {
      assert.equal((err as { error?: unknown }).error, error, String(err))
      return true
    })
  }

  it('a redirect URI not registered exactly: an error page, never a redirect', async () => {
    for (const other of [`${redirectUri}/`, `${redirectUri}?x=1`, 'http://127.0.0.1:9/callback2', 'http://localhost:9/callback']) {
      const { url } = await authorizationUrl({ redirect_uri: other })
      const answer = await step(new CookieJar(), url.href)
      assert.equal(answer.status, 400, other)
      assert.equal(answer.location, undefined, `no redirect to ${other}`)
      assert.match(answer.text, /redirect_uri/)
    }
  })

  it('an authorization request without PKCE, or with the plain method', async () => {
    const { url } = await authorizationUrl()
    url.searchParams.delete('code_challenge')
    url.searchParams.delete('code_challenge_method')
    const missing = await step(new CookieJar(), url.href)
    assert.equal(new URL(missing.location ?? '').searchParams.get('error'), 'invalid_request')
    const plain = await authorizationUrl({ code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' })
    const refused = await step(new CookieJar(), plain.url.href)
    assert.equal(new URL(refused.location ?? '').searchParams.get('error'), 'invalid_request')
  })

  it('a code exchanged with a wrong verifier, or none', async () => {
    const signedIn = await signIn()
    await rejectsWith(exchange(signedIn, client.randomPKCECodeVerifier()), 'invalid_grant')
    const other = await signIn()
    const answer = await undiciFetch(`${service.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: other.callback.searchParams.get('code') ?? '', redirect_uri: redirectUri }).toString(),
    })
    assert.equal(answer.status, 400)
    assert.equal(((await answer.json()) as { error: string }).error, 'invalid_grant')
  })

  it('a code used twice, and revokes what its first use issued', async () => {
    const signedIn = await signIn()
    const tokens = await exchange(signedIn)
    assert.equal((await client.fetchUserInfo(config, tokens.access_token, client.skipSubjectCheck)).sub, user.body.user.id)
    await rejectsWith(exchange(signedIn), 'invalid_grant')
    await assert.rejects(client.fetchUserInfo(config, tokens.access_token, client.skipSubjectCheck), 'the first access token is revoked')
    await rejectsWith(client.refreshTokenGrant(config, tokens.refresh_token ?? ''), 'invalid_grant')
  })

  it('a rotated refresh token presented again, and revokes the grant', async () => {
    const tokens = await exchange(await signIn())
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token ?? '')
    await rejectsWith(client.refreshTokenGrant(config, tokens.refresh_token ?? ''), 'invalid_grant')
    await rejectsWith(client.refreshTokenGrant(config, refreshed.refresh_token ?? ''), 'invalid_grant')
  })

  it('request objects signed with alg none or HS256', async () => {
    const { url } = await authorizationUrl()
    const claims = Object.fromEntries(url.searchParams)
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'oauth-authz-req+jwt' })).toString('base64url')
    const unsigned = `${header}.${Buffer.from(JSON.stringify({ ...claims, iss: clientId, aud: service.issuer })).toString('base64url')}.`
    const hmac = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256' }).setIssuer(clientId).setAudience(service.issuer).setIssuedAt().setExpirationTime('1m').sign(new TextEncoder().encode(secret))
    for (const requestObject of [unsigned, hmac]) {
      const signed = new URL(`${service.issuer}/auth`)
      signed.search = new URLSearchParams({ client_id: clientId, response_type: 'code', scope: 'openid', request: requestObject }).toString()
      const answer = await step(new CookieJar(), signed.href)
      const error = answer.location === undefined ? answer.text : (new URL(answer.location).searchParams.get('error') ?? '')
      assert.match(error, /invalid_request_object/, `${requestObject.split('.')[0] ?? ''}: ${answer.status} ${error.slice(0, 200)}`)
    }
  })

  it('a tampered state: the provider echoes the state unchanged, on success and on refusal; the client refuses any other', async () => {
    const signedIn = await signIn()
    assert.equal(signedIn.callback.searchParams.get('state'), signedIn.state, 'echoed unchanged')
    for (const tampered of [client.randomState(), `${signedIn.state}x`, signedIn.state.slice(1)]) {
      const callback = new URL(signedIn.callback)
      callback.searchParams.set('state', tampered)
      await assert.rejects(client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: signedIn.verifier, expectedState: signedIn.state, expectedNonce: signedIn.nonce }), (err: Error) => /"state"/.test(String((err.cause as Error | undefined)?.message)), tampered)
    }
    const stateless = new URL(signedIn.callback)
    stateless.searchParams.delete('state')
    await assert.rejects(client.authorizationCodeGrant(config, stateless, { pkceCodeVerifier: signedIn.verifier, expectedState: signedIn.state, expectedNonce: signedIn.nonce }), (err: Error) => /"state"/.test(String((err.cause as Error | undefined)?.message)))
    // The untampered callback still works: the refusals above were the state's, not the code's.
    assert.equal((await client.authorizationCodeGrant(config, signedIn.callback, { pkceCodeVerifier: signedIn.verifier, expectedState: signedIn.state, expectedNonce: signedIn.nonce })).claims()?.sub, user.body.user.id)
    // An odd state (any characters, as an application may encode its own) comes back byte for byte, on an error redirect too.
    const odd = 'a b+c/d=é&state=evil;%41'
    assert.equal((await walkSignIn(service.url, config, redirectUri, user, { state: odd })).callback.searchParams.get('state'), odd)
    const refused = await step(new CookieJar(), (await authorizationUrl({ state: odd, code_challenge_method: 'plain' })).url.href)
    const errorCallback = new URL(refused.location ?? '')
    assert.equal(errorCallback.searchParams.get('error'), 'invalid_request')
    assert.equal(errorCallback.searchParams.get('state'), odd)
  })

  it('an unknown or expired interaction: a page saying so, 400', async () => {
    const answer = await step(new CookieJar(), `${service.url}/oidc/interaction/no-such-interaction`)
    assert.equal(answer.status, 400)
    assert.match(answer.headers.get('content-type') ?? '', /text\/html/)
    assert.match(answer.text, /expired/)
  })

  it('the tokens of a sign-in whose session was ended in /me/sessions', async () => {
    const before = await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken })
    const tokens = await exchange(await signIn())
    const during = await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken })
    const known = new Set((before.body.items as Array<{ id: string }>).map((session) => session.id))
    const opened = (during.body.items as Array<{ id: string }>).filter((session) => !known.has(session.id))
    assert.equal(opened.length, 1, 'the sign-in opened one session')
    const ended = await request(service, 'DELETE', `/api/v1/me/sessions/${opened[0]?.id ?? ''}`, { token: user.body.accessToken })
    assert.equal(ended.status, 204)
    await assert.rejects(client.fetchUserInfo(config, tokens.access_token, client.skipSubjectCheck))
    await rejectsWith(client.refreshTokenGrant(config, tokens.refresh_token ?? ''), 'invalid_grant')
  })
})
