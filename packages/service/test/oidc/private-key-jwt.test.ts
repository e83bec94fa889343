/**
 * A confidential client that authenticates with private_key_jwt alone (RFC 7523; no secret): its
 * public keys registered with it, openid-client signs its assertions for the code exchange and
 * refresh; an assertion signed by another key, one presented twice (its jti, kept in
 * PostgreSQL), one for another audience, or an expired one is refused with invalid_client.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose'
import { fetch as undiciFetch } from 'undici'
import { addClient } from '../../src/oidc/index.js'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'
import { walkSignIn } from '../helpers/oidc-walk.js'
import { registerUser } from '../helpers/service.js'

const redirectUri = 'http://127.0.0.1:9/callback'
const kid = 'client-key-1'

describe('private_key_jwt client authentication', () => {
  let service: OidcTestService
  let config: client.Configuration
  let clientId: string
  let privateKey: CryptoKey
  let user: Awaited<ReturnType<typeof registerUser>>

  before(async () => {
    service = await startOidcService()
    user = await registerUser(service)
    const pair = await generateKeyPair('ES256')
    privateKey = pair.privateKey
    const publicJwk = { ...await exportJWK(pair.publicKey), kid, alg: 'ES256', use: 'sig' }
    const added = await addClient(service.db.pool, { clientId: undefined, name: 'Signed app', redirectUris: [redirectUri], postLogoutRedirectUris: [], authMethod: 'private_key_jwt', jwks: { keys: [publicJwk] }, firstParty: true })
    assert.equal(added.secret, undefined, 'no secret for a client that signs its assertions')
    clientId = added.clientId
    config = await client.discovery(new URL(service.issuer), clientId, undefined, client.PrivateKeyJwt({ key: privateKey, kid }), { execute: [client.allowInsecureRequests] })
  })
  after(async () => { await service?.close() })

  function endpoint (name: 'introspection_endpoint' | 'token_endpoint'): string {
    return String(config.serverMetadata()[name])
  }

  /** A client assertion as RFC 7523 has it, each part overridable. */
  async function assertion (overrides: { key?: CryptoKey, audience?: string, jti?: string, expiresAt?: number } = {}): Promise<string> {
    const nowSeconds = Math.floor(Date.now() / 1000)
    return await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(overrides.audience ?? service.issuer)
      .setJti(overrides.jti ?? randomUUID())
      .setIssuedAt(nowSeconds - 5)
      .setExpirationTime(overrides.expiresAt ?? nowSeconds + 60)
      .sign(overrides.key ?? privateKey)
  }

  /** Introspects a token, authenticated by the given assertion: the status and the answer. */
  async function introspect (clientAssertion: string, token: string): Promise<{ status: number, body: Record<string, unknown> }> {
    const answer = await undiciFetch(endpoint('introspection_endpoint'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ client_id: clientId, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: clientAssertion, token }).toString(),
    })
    return { status: answer.status, body: await answer.json() as Record<string, unknown> }
  }

  it('exchanges a code and refreshes with assertions openid-client signs, no secret anywhere', async () => {
    const signedIn = await walkSignIn(service.url, config, redirectUri, user)
    const tokens = await client.authorizationCodeGrant(config, signedIn.callback, { pkceCodeVerifier: signedIn.verifier, expectedState: signedIn.state, expectedNonce: signedIn.nonce })
    assert.equal(tokens.claims()?.sub, user.body.user.id)
    assert.equal(tokens.claims()?.aud, clientId)
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token ?? '')
    assert.equal((await client.fetchUserInfo(config, refreshed.access_token, user.body.user.id)).email, user.email)
  })

  it('accepts a good assertion once; refuses it presented again, signed by another key, for another audience, or expired', async () => {
    const signedIn = await walkSignIn(service.url, config, redirectUri, user)
    const { access_token: accessToken } = await client.authorizationCodeGrant(config, signedIn.callback, { pkceCodeVerifier: signedIn.verifier, expectedState: signedIn.state, expectedNonce: signedIn.nonce })

    const good = await assertion()
    const accepted = await introspect(good, accessToken)
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body))
    assert.equal(accepted.body.active, true)
    assert.equal(accepted.body.client_id, clientId)
    // Also addressed to the token endpoint's URL, which RFC 7523 names as an audience.
    assert.equal((await introspect(await assertion({ audience: endpoint('token_endpoint') }), accessToken)).status, 200)

    const replayed = await introspect(good, accessToken)
    assert.deepEqual([replayed.status, replayed.body.error], [401, 'invalid_client'], 'the jti was seen')
    const { rows } = await service.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM oidc_payloads WHERE model = 'ReplayDetection'")
    assert.ok((rows[0]?.n ?? 0) >= 2, 'the seen jtis are kept in PostgreSQL, for every replica')

    const otherKey = (await generateKeyPair('ES256')).privateKey
    const refusals: Record<string, string> = {
      'another key': await assertion({ key: otherKey }),
      'another audience': await assertion({ audience: 'https://elsewhere.example/oidc' }),
      expired: await assertion({ expiresAt: Math.floor(Date.now() / 1000) - 60 }),
    }
    for (const [what, refused] of Object.entries(refusals)) {
      const answer = await introspect(refused, accessToken)
      assert.deepEqual([answer.status, answer.body.error], [401, 'invalid_client'], what)
    }
    // A client_secret for this client is no way in either: it has none, and secrets are not its method.
    const withSecret = await undiciFetch(endpoint('introspection_endpoint'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:guess`).toString('base64')}` },
      body: new URLSearchParams({ token: accessToken }).toString(),
    })
    assert.equal(withSecret.status, 401)
  })
})
