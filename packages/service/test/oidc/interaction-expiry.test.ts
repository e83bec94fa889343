/**
 * A sign-in left open past TOLLBOOTH_OIDC_INTERACTION_TTL_SECONDS (1 s here): once PostgreSQL
 * says its interaction has expired, its pages and its resume are refused with a page (400, never
 * a redirect to the client with a code), and the right password given then opens no session.
 * No sleeping: the test waits until PostgreSQL holds the row as expired.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import { addClient } from '../../src/oidc/index.js'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'
import { authorizationRequest, CookieJar, step } from '../helpers/oidc-walk.js'
import { registerUser, request } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

const redirectUri = 'http://127.0.0.1:9/callback'
const interactionTtlSeconds = 1

describe('an expired OpenID Connect sign-in', () => {
  let service: OidcTestService
  let config: client.Configuration
  let user: Awaited<ReturnType<typeof registerUser>>

  before(async () => {
    service = await startOidcService({ config: { oidcInteractionTtlSeconds: interactionTtlSeconds } })
    user = await registerUser(service)
    const added = await addClient(service.db.pool, { clientId: undefined, name: 'Slow app', redirectUris: [redirectUri], postLogoutRedirectUris: [], authMethod: 'client_secret_basic', jwks: undefined, firstParty: true })
    config = await client.discovery(new URL(service.issuer), added.clientId, undefined, client.ClientSecretBasic(added.secret ?? ''), { execute: [client.allowInsecureRequests] })
  })
  after(async () => { await service?.close() })

  async function interactionRow (uid: string): Promise<{ lifetimeSeconds: number, expired: boolean } | undefined> {
    const { rows } = await service.db.pool.query<{ lifetime: number, expired: boolean }>(
      "SELECT (payload->>'exp')::int - (payload->>'iat')::int AS lifetime, expires_at <= now() AS expired FROM oidc_payloads WHERE model = 'Interaction' AND id = $1", [uid])
    const row = rows[0]
    return row === undefined ? undefined : { lifetimeSeconds: row.lifetime, expired: row.expired }
  }

  it('is refused on its pages and its resume, with the right password too, and opens no session', async () => {
    const jar = new CookieJar()
    const { url } = await authorizationRequest(config, redirectUri)
    const started = await step(jar, url.href)
    assert.equal(started.status, 303, started.text.slice(0, 300))
    const interactionUrl = started.location ?? ''
    const uid = /\/interaction\/([^/?]+)$/.exec(new URL(interactionUrl).pathname)?.[1] ?? ''
    assert.notEqual(uid, '', interactionUrl)
    const row = await interactionRow(uid)
    assert.equal(row?.lifetimeSeconds, interactionTtlSeconds, 'the setting is the interaction\'s lifetime')

    await waitFor('PostgreSQL to hold the interaction as expired', async () => (await interactionRow(uid))?.expired === true, { timeoutMs: 30_000, intervalMs: 100 })
    const sessionsBefore = await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken })

    const page = await step(jar, interactionUrl)
    assert.equal(page.status, 400)
    assert.equal(page.location, undefined)
    assert.match(page.text, /Sign-in expired/)

    const posted = await step(jar, `${interactionUrl}/login`, { email: user.email, password: user.password })
    assert.equal(posted.status, 400, posted.text.slice(0, 300))
    assert.equal(posted.location, undefined, 'no way on to the client')
    assert.match(posted.text, /Sign-in expired/)

    // The provider's own resume of the interaction: an error page, no code for the client.
    const resumed = await step(jar, `${service.issuer}/auth/${uid}`)
    assert.ok(resumed.status >= 400 && resumed.status < 500, `resume: ${resumed.status}`)
    assert.ok(resumed.location === undefined || new URL(resumed.location).searchParams.get('code') === null, `resume went to ${String(resumed.location)}`)

    const sessionsAfter = await request(service, 'GET', '/api/v1/me/sessions', { token: user.body.accessToken })
    assert.equal(sessionsAfter.body.items.length, sessionsBefore.body.items.length, 'no session opened')
  })
})
