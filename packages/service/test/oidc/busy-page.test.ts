/**
 * The sign-in page under a crowd: its password check is admitted as POST /api/v1/auth/login's, so
 * when the hash queue cannot meet the login deadline the browser gets 503 with Retry-After and a
 * "busy, retry in N s" page at once, never a hang; the sign-ins admitted still complete.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import { addClient } from '../../src/oidc/index.js'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'
import { CookieJar, follow, formAction, step } from '../helpers/oidc-walk.js'
import { registerUser, seedPolicy } from '../helpers/service.js'

const redirectUri = 'http://127.0.0.1:9/callback'

describe('the OpenID Connect sign-in page under a login storm', () => {
  let service: OidcTestService
  let user: Awaited<ReturnType<typeof registerUser>>
  let config: client.Configuration

  before(async () => {
    // One thread at nice 0, and a deadline of some mean hash times: beside busy nice-0 processes a
    // nice-10 thread, or a short deadline, lets no hash through, and the test wants some sign-ins
    // through as well as the refusals.
    service = await startOidcService({ policy: seedPolicy, threads: 1, config: { loginDeadlineMs: 2000, hashThreadNice: 0 } })
    user = await registerUser(service)
    const added = await addClient(service.db.pool, { clientId: undefined, name: 'Crowded app', redirectUris: [redirectUri], postLogoutRedirectUris: [], authMethod: 'none', jwks: undefined, firstParty: true })
    config = await client.discovery(new URL(service.issuer), added.clientId, undefined, client.None(), { execute: [client.allowInsecureRequests] })
  })
  after(async () => { await service?.close() })

  it('answers the browsers it cannot serve in time 503 + Retry-After with a busy page, and signs the others in', async () => {
    const storm = 40
    // Each browser at the sign-in page first (no hash), then all post their password at once.
    const browsers = await Promise.all(Array.from({ length: storm }, async () => {
      const jar = new CookieJar()
      const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256', state: client.randomState() })
      const walked = await follow(jar, url.href, service.url)
      assert.ok(walked.page !== undefined && walked.page.status === 200, 'the sign-in page')
      return { jar, action: formAction(walked.page.text, service.url) }
    }))
    const started = performance.now()
    const answers = await Promise.all(browsers.map(async ({ jar, action }) => await step(jar, action, { email: user.email, password: user.password })))
    const elapsedMs = performance.now() - started
    const busy = answers.filter((answer) => answer.status === 503)
    const signedIn = answers.filter((answer) => answer.status === 303)
    assert.equal(busy.length + signedIn.length, storm, `statuses: ${answers.map((answer) => answer.status).join(',')}`)
    assert.ok(signedIn.length >= 1, 'some sign-ins complete')
    // About 3 s of hashes against a 2 s deadline: a quiet machine refuses a third or more, a busy one most.
    assert.ok(busy.length >= storm / 4, `a good part of ${storm} sign-ins against a 2 s deadline on one thread are refused (got ${busy.length})`)
    for (const answer of busy) {
      const retryAfter = Number(answer.headers.get('retry-after'))
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After ${String(answer.headers.get('retry-after'))}`)
      assert.match(answer.headers.get('content-type') ?? '', /text\/html/)
      assert.match(answer.text, new RegExp(`try again in ${retryAfter} s`))
    }
    assert.ok(elapsedMs < 10_000, `the storm answered in ${elapsedMs.toFixed(0)} ms, no hang`)
  })
})
