/**
 * Where the provider's clients come from besides `tollbooth clients add`: a clients file applied
 * at start (TOLLBOOTH_OIDC_CLIENTS_FILE), and dynamic client registration (RFC 7591), off unless
 * TOLLBOOTH_OIDC_REGISTRATION says otherwise. Each registered client then walks the code flow with
 * openid-client, which registers itself in the dynamic case.
 */
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import { fetch as undiciFetch } from 'undici'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'
import { authorizationRequest, CookieJar, follow, formAction, step, walkSignIn } from '../helpers/oidc-walk.js'
import { registerUser, request } from '../helpers/service.js'

const redirectUri = 'http://127.0.0.1:9/callback'
const insecure = { execute: [client.allowInsecureRequests] }

type User = Awaited<ReturnType<typeof registerUser>>

/** The code flow through a sign-in and, for a client that is not first-party, the consent page; the client checks the ID token. */
async function signInThrough (service: OidcTestService, config: client.Configuration, user: User): Promise<client.TokenEndpointResponse & client.TokenEndpointResponseHelpers> {
  const jar = new CookieJar()
  const started = await authorizationRequest(config, redirectUri)
  const signInPage = await follow(jar, started.url.href, service.url)
  assert.ok(signInPage.page !== undefined, 'the sign-in page')
  const signedIn = await step(jar, formAction(signInPage.page.text, service.url), { email: user.email, password: user.password })
  assert.equal(signedIn.status, 303, signedIn.text.slice(0, 300))
  let walked = await follow(jar, signedIn.location ?? '', service.url)
  if (walked.page !== undefined) {
    assert.match(walked.page.text, /Allow|allow/, 'the consent page')
    const consented = await step(jar, formAction(walked.page.text, service.url), {})
    assert.equal(consented.status, 303, consented.text.slice(0, 300))
    walked = await follow(jar, consented.location ?? '', service.url)
  }
  const callback = walked.arrivedAt
  assert.ok(callback?.href.startsWith(redirectUri) === true, `arrived at the client: ${String(callback ?? walked.page?.text.slice(0, 300))}`)
  return await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: started.verifier, expectedState: started.state, expectedNonce: started.nonce })
}

async function register (service: OidcTestService, metadata: Record<string, unknown>, token?: string): Promise<{ status: number, body: Record<string, unknown> }> {
  const response = await undiciFetch(`${service.issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(metadata),
  })
  // oidc-provider answers an unknown path (the registration endpoint when it is off) with a plain "Not Found".
  const json = response.headers.get('content-type')?.startsWith('application/json') === true
  return { status: response.status, body: json ? await response.json() as Record<string, unknown> : { text: await response.text() } }
}

async function clientCount (service: OidcTestService): Promise<number> {
  const { rows } = await service.db.pool.query<{ count: string }>('SELECT count(*) FROM oidc_clients')
  return Number(rows[0]?.count)
}

describe('a clients file applied at start', () => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-clients-'))
  const file = path.join(folder, 'clients.json')
  const secret = randomBytes(32).toString('base64url')
  let service: OidcTestService
  before(async () => {
    fs.writeFileSync(file, JSON.stringify({
      clients: [
        { client_id: 'intranet', client_name: 'Intranet', redirect_uris: [redirectUri], client_secret: secret, tollbooth_first_party: true },
        { client_id: 'partner', redirect_uris: [redirectUri], token_endpoint_auth_method: 'client_secret_post', client_secret_sha256: createHash('sha256').update(secret).digest('hex') },
      ],
    }))
    service = await startOidcService({ config: { oidcClientsFile: file } })
  })
  after(async () => {
    await service?.close()
    fs.rmSync(folder, { recursive: true, force: true })
  })

  it('registers its clients, which sign users in with the secret the file gave (or whose SHA-256 it gave)', async () => {
    const { rows } = await service.db.pool.query<{ client_id: string, source: string, secret_hash: Buffer, first_party: boolean }>('SELECT client_id, source, secret_hash, first_party FROM oidc_clients ORDER BY client_id')
    assert.deepEqual(rows.map((row) => [row.client_id, row.source, row.first_party]), [['intranet', 'file', true], ['partner', 'file', false]])
    for (const row of rows) assert.deepEqual(row.secret_hash, createHash('sha256').update(secret).digest(), `${row.client_id}: only the secret's SHA-256 is stored`)
    const user = await registerUser(service)
    const intranet = await client.discovery(new URL(service.issuer), 'intranet', undefined, client.ClientSecretBasic(secret), insecure)
    const firstParty = await walkSignIn(service.url, intranet, redirectUri, user)
    const tokens = await client.authorizationCodeGrant(intranet, firstParty.callback, { pkceCodeVerifier: firstParty.verifier, expectedState: firstParty.state, expectedNonce: firstParty.nonce })
    assert.equal(tokens.claims()?.sub, user.body.user.id)
    const partner = await client.discovery(new URL(service.issuer), 'partner', undefined, client.ClientSecretPost(secret), insecure)
    assert.equal((await signInThrough(service, partner, user)).claims()?.sub, user.body.user.id)
    const wrong = await client.discovery(new URL(service.issuer), 'partner', undefined, client.ClientSecretPost(`${secret}x`), insecure)
    await assert.rejects(signInThrough(service, wrong, user), (err: unknown) => (err as { error?: unknown }).error === 'invalid_client')
  })
})

describe('dynamic client registration', () => {
  const token = randomBytes(32).toString('base64url')
  let off: OidcTestService
  let guarded: OidcTestService
  let open: OidcTestService
  // One after another, each kept as soon as it runs: a start that fails (a loaded machine's
  // database timeout) leaves the others to be closed, not holding the test process open.
  before(async () => {
    off = await startOidcService()
    guarded = await startOidcService({ config: { oidcRegistration: 'token', oidcRegistrationToken: token } })
    open = await startOidcService({ config: { oidcRegistration: 'open' } })
  })
  after(async () => { await Promise.all([off, guarded, open].map(async (service) => await service?.close())) })

  it('is off by default: no registration endpoint in discovery, and /reg is not found', async () => {
    const discovered = await client.discovery(new URL(off.issuer), 'nobody', undefined, client.None(), insecure)
    assert.equal(discovered.serverMetadata().registration_endpoint, undefined)
    const tried = await register(off, { redirect_uris: [redirectUri] })
    assert.equal(tried.status, 404)
    assert.equal(await clientCount(off), 0)
  })

  it('with a token: refused without it or with another, and a client registered by openid-client signs a user in after consent', async () => {
    for (const presented of [undefined, `${token}x`]) {
      const refused = await register(guarded, { redirect_uris: [redirectUri] }, presented)
      assert.equal(refused.status, 401, JSON.stringify(refused.body))
      assert.equal(refused.body.error, 'invalid_token')
    }
    assert.equal(await clientCount(guarded), 0)
    const config = await client.dynamicClientRegistration(new URL(guarded.issuer), { redirect_uris: [redirectUri], client_name: 'Registered app' }, undefined, { ...insecure, initialAccessToken: token })
    const { client_id: clientId, client_secret: secret } = config.clientMetadata()
    assert.equal(typeof secret, 'string')
    const { rows } = await guarded.db.pool.query<{ source: string, first_party: boolean, secret_hash: Buffer, metadata: Record<string, unknown> }>('SELECT source, first_party, secret_hash, metadata FROM oidc_clients WHERE client_id = $1', [clientId])
    assert.equal(rows[0]?.source, 'registration')
    assert.equal(rows[0]?.first_party, false)
    assert.deepEqual(rows[0]?.secret_hash, createHash('sha256').update(secret as string).digest(), 'only the secret\'s SHA-256 is stored')
    assert.ok(!JSON.stringify(rows[0]?.metadata).includes(secret as string), 'and the secret is nowhere in its metadata')
    const user = await registerUser(guarded)
    const tokens = await signInThrough(guarded, config, user)
    assert.equal(tokens.claims()?.sub, user.body.user.id)
  })

  it('open: anyone registers, but never a first-party client nor one naming URLs the provider would fetch; nothing is stored for those', async () => {
    const before = await clientCount(open)
    for (const [member, value] of [['tollbooth_first_party', true], ['jwks_uri', 'http://127.0.0.1:9/jwks'], ['sector_identifier_uri', 'http://127.0.0.1:9/sector'], ['request_uris', ['http://127.0.0.1:9/request']]] as const) {
      const refused = await register(open, { redirect_uris: [redirectUri], [member]: value })
      assert.equal(refused.status, 400, `${member}: ${JSON.stringify(refused.body)}`)
      assert.equal(refused.body.error, 'invalid_client_metadata')
      assert.match(String(refused.body.error_description), new RegExp(member))
    }
    for (const unsupported of [{ redirect_uris: [redirectUri], response_types: ['id_token'], grant_types: ['implicit'] }, { redirect_uris: [`${redirectUri}#fragment`] }, { redirect_uris: [redirectUri], grant_types: ['client_credentials'] }]) {
      const refused = await register(open, unsupported)
      assert.equal(refused.status, 400, JSON.stringify(refused.body))
      assert.match(String(refused.body.error), /^invalid_/)
    }
    assert.equal(await clientCount(open), before)
    const registered = await register(open, { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' })
    assert.equal(registered.status, 201, JSON.stringify(registered.body))
    assert.equal(registered.body.client_secret, undefined, 'a public client gets no secret')
    assert.equal(registered.body.registration_access_token, undefined, 'nor a registration access token: the operator manages registered clients')
    const config = await client.discovery(new URL(open.issuer), registered.body.client_id as string, undefined, client.None(), insecure)
    const user = await registerUser(open)
    assert.equal((await signInThrough(open, config, user)).claims()?.sub, user.body.user.id)
  })
})

describe('dynamic client registration under its bound', () => {
  let service: OidcTestService
  before(async () => { service = await startOidcService({ config: { oidcRegistration: 'open', registerThrottleClientRequests: 3 } }) })
  after(async () => { await service?.close() })

  it('counts every registration of an address, refused ones too; past the bound 429 with Retry-After and nothing stored; another address is not held back', async () => {
    const from = '127.0.0.2'
    const answers = [
      await request(service, 'POST', '/oidc/reg', { from, body: { redirect_uris: [redirectUri], jwks_uri: 'http://127.0.0.1:9/jwks' } }),
      await request(service, 'POST', '/oidc/reg', { from, body: { redirect_uris: [redirectUri] } }),
      await request(service, 'POST', '/oidc/reg', { from, body: { redirect_uris: [redirectUri] } }),
    ]
    assert.deepEqual(answers.map((answer) => answer.status), [400, 201, 201])
    const stored = await clientCount(service)
    const refused = await request(service, 'POST', '/oidc/reg', { from, body: { redirect_uris: [redirectUri] } })
    assert.equal(refused.status, 429, JSON.stringify(refused.body))
    assert.equal(refused.body.error, 'too_many_requests')
    const retryAfter = Number(refused.headers.get('retry-after'))
    assert.ok(retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${String(retryAfter)} within the window`)
    assert.equal(await clientCount(service), stored, 'the refused registration stored nothing')
    const elsewhere = await request(service, 'POST', '/oidc/reg', { from: '127.0.0.3', body: { redirect_uris: [redirectUri] } })
    assert.equal(elsewhere.status, 201, JSON.stringify(elsewhere.body))
  })
})
