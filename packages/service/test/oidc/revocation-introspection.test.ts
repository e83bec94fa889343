/**
 * Token revocation (RFC 7009) and introspection (RFC 7662) through openid-client: a live token is
 * active with its subject and client; a revoked access or refresh token is inactive and refused
 * at userinfo and at the token endpoint, with the rest of its grant (RFC 7009 allows it), while
 * another sign-in's tokens live on. Introspection and revocation act only on the calling
 * client's own tokens, and introspection answers only a client that authenticated.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import { fetch as undiciFetch } from 'undici'
import { addClient } from '../../src/oidc/index.js'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'
import { walkSignIn } from '../helpers/oidc-walk.js'
import { registerUser } from '../helpers/service.js'

const redirectUri = 'http://127.0.0.1:9/callback'

describe('token revocation and introspection', () => {
  let service: OidcTestService
  let config: client.Configuration
  let other: client.Configuration
  let publicClient: client.Configuration
  let credentials: { clientId: string, secret: string }
  let user: Awaited<ReturnType<typeof registerUser>>

  before(async () => {
    service = await startOidcService()
    user = await registerUser(service)
    const connect = async (authMethod: 'client_secret_basic' | 'none'): Promise<{ config: client.Configuration, clientId: string, secret: string }> => {
      const added = await addClient(service.db.pool, { clientId: undefined, name: `App ${authMethod}`, redirectUris: [redirectUri], postLogoutRedirectUris: [], authMethod, jwks: undefined, firstParty: true })
      const auth = added.secret === undefined ? client.None() : client.ClientSecretBasic(added.secret)
      return { config: await client.discovery(new URL(service.issuer), added.clientId, undefined, auth, { execute: [client.allowInsecureRequests] }), clientId: added.clientId, secret: added.secret ?? '' }
    }
    const main = await connect('client_secret_basic')
    config = main.config
    credentials = { clientId: main.clientId, secret: main.secret }
    other = (await connect('client_secret_basic')).config
    publicClient = (await connect('none')).config
  })
  after(async () => { await service?.close() })

  async function tokensFor (configuration: client.Configuration): Promise<client.TokenEndpointResponse & client.TokenEndpointResponseHelpers> {
    const signedIn = await walkSignIn(service.url, configuration, redirectUri, user)
    return await client.authorizationCodeGrant(configuration, signedIn.callback, { pkceCodeVerifier: signedIn.verifier, expectedState: signedIn.state, expectedNonce: signedIn.nonce })
  }

  async function rawIntrospection (headers: Record<string, string>, form: Record<string, string>): Promise<{ status: number, body: Record<string, unknown> }> {
    const answer = await undiciFetch(String(config.serverMetadata().introspection_endpoint), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', ...headers },
      body: new URLSearchParams(form).toString(),
    })
    return { status: answer.status, body: await answer.json() as Record<string, unknown> }
  }

  it('introspects live tokens as active, with subject, client, scope and expiry; an unknown one as inactive', async () => {
    const tokens = await tokensFor(config)
    const access = await client.tokenIntrospection(config, tokens.access_token)
    assert.equal(access.active, true)
    assert.equal(access.sub, user.body.user.id)
    assert.equal(access.client_id, credentials.clientId)
    assert.equal(access.token_type, 'Bearer')
    assert.match(String(access.scope), /openid/)
    assert.ok(typeof access.exp === 'number' && access.exp > Date.now() / 1000)
    const refresh = await client.tokenIntrospection(config, tokens.refresh_token ?? '', { token_type_hint: 'refresh_token' })
    assert.equal(refresh.active, true)
    assert.equal(refresh.sub, user.body.user.id)
    assert.deepEqual(await client.tokenIntrospection(config, 'no-such-token'), { active: false })
  })

  it('a revoked access token is inactive and refused at userinfo, its grant\'s refresh token with it; another sign-in\'s tokens live on', async () => {
    const tokens = await tokensFor(config)
    const untouched = await tokensFor(config)
    assert.equal((await client.fetchUserInfo(config, tokens.access_token, user.body.user.id)).sub, user.body.user.id)
    await client.tokenRevocation(config, tokens.access_token, { token_type_hint: 'access_token' })
    assert.deepEqual(await client.tokenIntrospection(config, tokens.access_token), { active: false })
    await assert.rejects(client.fetchUserInfo(config, tokens.access_token, user.body.user.id), (err: unknown) => {
      assert.equal((err as { status?: number }).status, 401, String(err))
      return true
    })
    // RFC 7009 section 2.1 lets the server revoke the refresh token of the same grant too: oidc-provider does.
    assert.deepEqual(await client.tokenIntrospection(config, tokens.refresh_token ?? ''), { active: false })
    await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token ?? ''), (err: unknown) => (err as { error?: string }).error === 'invalid_grant')
    assert.equal((await client.tokenIntrospection(config, untouched.access_token)).active, true)
    assert.equal((await client.fetchUserInfo(config, untouched.access_token, user.body.user.id)).sub, user.body.user.id)
  })

  it('another client\'s token is left alone by a revocation (answered 200 all the same)', async () => {
    const tokens = await tokensFor(config)
    await client.tokenRevocation(other, tokens.access_token)
    assert.equal((await client.tokenIntrospection(config, tokens.access_token)).active, true)
  })

  it('a revoked refresh token is inactive and refused at the token endpoint, and its grant\'s access token with it', async () => {
    const tokens = await tokensFor(config)
    await client.tokenRevocation(config, tokens.refresh_token ?? '', { token_type_hint: 'refresh_token' })
    assert.deepEqual(await client.tokenIntrospection(config, tokens.refresh_token ?? ''), { active: false })
    assert.deepEqual(await client.tokenIntrospection(config, tokens.access_token), { active: false })
    await assert.rejects(client.fetchUserInfo(config, tokens.access_token, user.body.user.id))
    await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token ?? ''), (err: unknown) => {
      assert.equal((err as { error?: string }).error, 'invalid_grant', String(err))
      return true
    })
  })

  it('answers only a client that authenticated, and only about its own tokens', async () => {
    const tokens = await tokensFor(config)
    const anonymous = await rawIntrospection({}, { token: tokens.access_token })
    assert.deepEqual([anonymous.status, anonymous.body.error], [400, 'invalid_request'], 'no client named at all')
    assert.equal(anonymous.body.active, undefined)
    const wrongSecret = await rawIntrospection({ authorization: `Basic ${Buffer.from(`${credentials.clientId}:not-the-secret`).toString('base64')}` }, { token: tokens.access_token })
    assert.deepEqual([wrongSecret.status, wrongSecret.body.error], [401, 'invalid_client'], 'a wrong secret')
    const namedOnly = await rawIntrospection({}, { client_id: credentials.clientId, token: tokens.access_token })
    assert.deepEqual([namedOnly.status, namedOnly.body.error], [401, 'invalid_client'], 'a confidential client named without its secret')
    assert.deepEqual(await client.tokenIntrospection(other, tokens.access_token), { active: false }, 'another confidential client learns nothing of it')
    // A public client proves nothing but its id (RFC 7662 section 4: no token scanning): told nothing, its own tokens included.
    const own = await tokensFor(publicClient)
    assert.deepEqual(await client.tokenIntrospection(publicClient, own.access_token), { active: false })
    assert.equal((await client.tokenIntrospection(config, tokens.access_token)).active, true, 'the token was live all along')
  })
})
