/**
 * A sign-in through the OpenID Connect provider started on one replica and finished on another:
 * two real `tollbooth serve` processes on one PostgreSQL behind a real HAProxy, the issuer
 * HAProxy's address. Replica A answers the authorization request and the sign-in page; replica B
 * (addressed directly) takes the password and resumes the flow; then A is stopped and HAProxy,
 * with only B left, serves the code exchange, userinfo and refresh to openid-client. Everything A
 * kept of the flow was in PostgreSQL. Skipped when haproxy is missing.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import { haproxyBinary, startServe, type ServeProcess } from '../../src/launcher/index.js'
import { startHaproxy, type RunningHaproxy } from '../../src/launcher/haproxy.js'
import { addClient } from '../../src/oidc/index.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { authorizationRequest, CookieJar, formAction, step, type WalkResponse } from '../helpers/oidc-walk.js'
import { freePort, registerUser, serveEnv } from '../helpers/service.js'

const noHaproxy = haproxyBinary() === undefined ? 'haproxy is not installed (Debian package `haproxy`)' : false
const redirectUri = 'http://127.0.0.1:9/callback'

/** The same path and query on another origin: the browser's next request, sent to the replica the test picks. */
function on (origin: string, url: string): string {
  const parsed = new URL(url)
  return new URL(`${parsed.pathname}${parsed.search}`, origin).href
}

describe('an OpenID Connect sign-in across replicas behind HAProxy', { skip: noHaproxy }, () => {
  let db: TestDatabase
  let a: ServeProcess
  let b: ServeProcess
  let haproxy: RunningHaproxy
  let replicas: ServeProcess[] = []

  before(async () => {
    db = await createTestDatabase({ migrate: false })
    const haproxyPort = await freePort()
    const env = serveEnv(db.url, { TOLLBOOTH_OIDC: 'true', TOLLBOOTH_PUBLIC_URL: `http://127.0.0.1:${haproxyPort}`, TOLLBOOTH_HASH_THREADS: '1' })
    const starts = await Promise.allSettled([0, 1].map(async () => await startServe({ env, tailLines: 200, startTimeoutMs: 90_000 })))
    replicas = starts.flatMap((start) => start.status === 'fulfilled' ? [start.value] : [])
    const failed = starts.find((start) => start.status === 'rejected')
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
    ;[a, b] = replicas as [ServeProcess, ServeProcess]
    haproxy = await startHaproxy({ port: haproxyPort, servers: [{ name: 'a', port: Number(new URL(a.url).port) }, { name: 'b', port: Number(new URL(b.url).port) }] })
    await haproxy.waitFor(['a', 'b'], true)
  })
  after(async () => {
    await haproxy?.stop()
    await Promise.all(replicas.map(async (replica) => { await replica.stop() }))
    await db?.drop()
  })

  it('authorize and the sign-in page on A, the password and the resume on B, then with A gone the code exchange, userinfo and refresh through HAProxy', async () => {
    const issuer = `${haproxy.url}/oidc`
    const user = await registerUser(haproxy)
    const added = await addClient(db.pool, { clientId: undefined, name: 'Replicated app', redirectUris: [redirectUri], postLogoutRedirectUris: [], authMethod: 'client_secret_basic', jwks: undefined, firstParty: true })
    const config = await client.discovery(new URL(issuer), added.clientId, undefined, client.ClientSecretBasic(added.secret ?? ''), { execute: [client.allowInsecureRequests] })
    const started = await authorizationRequest(config, redirectUri)
    const jar = new CookieJar()

    // On A: the authorization request opens the interaction, A renders its sign-in page.
    const authorized = await step(jar, on(a.url, started.url.href))
    assert.equal(authorized.status, 303, authorized.text.slice(0, 300))
    const signInPage = await step(jar, on(a.url, authorized.location ?? ''))
    assert.equal(signInPage.status, 200, signInPage.text.slice(0, 300))
    const uid = /\/interaction\/([^/]+)\/login$/.exec(formAction(signInPage.text, a.url))?.[1] ?? ''
    const { rows } = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM oidc_payloads WHERE model = 'Interaction' AND id = $1", [uid])
    assert.equal(rows[0]?.n, 1, 'A kept the interaction in PostgreSQL')

    // On B: the password, then the provider's resume, until the browser is sent to the client.
    let answer: WalkResponse = await step(jar, on(b.url, formAction(signInPage.text, a.url)), { email: user.email, password: user.password })
    assert.equal(answer.status, 303, `B took the sign-in: ${answer.status} ${answer.text.slice(0, 300)}`)
    for (let hops = 0; answer.location !== undefined && !answer.location.startsWith(redirectUri); hops++) {
      assert.ok(hops < 10, 'too many redirects')
      answer = await step(jar, on(b.url, answer.location))
    }
    assert.ok(answer.location?.startsWith(redirectUri) === true, `B sent the browser to the client: ${answer.status} ${answer.text.slice(0, 300)}`)
    const callback = new URL(answer.location ?? '')
    assert.equal(callback.searchParams.get('state'), started.state)

    // A goes away; HAProxy has only B to send the rest to.
    await a.stop()
    await haproxy.waitFor(['a'], false)
    await assert.rejects(fetch(`${a.url}/readyz`), 'A is down')
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: started.verifier, expectedState: started.state, expectedNonce: started.nonce })
    assert.equal(tokens.claims()?.iss, issuer)
    assert.equal(tokens.claims()?.sub, user.body.user.id)
    assert.equal((await client.fetchUserInfo(config, tokens.access_token, user.body.user.id)).email, user.email)
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token ?? '')
    assert.ok(refreshed.refresh_token !== undefined && refreshed.refresh_token !== tokens.refresh_token)
    assert.equal((await haproxy.serverStates()).get('b'), 'UP')
  })
})
