import { labRoutes } from '../../src/harness/lab-routes.js'
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerUser, request, startTestService, uniqueEmail, type JsonResponse, type TestService } from '../helpers/service.js'

function assertSecurityHeaders (response: JsonResponse, what: string): void {
  assert.equal(response.headers.get('x-content-type-options'), 'nosniff', `${what}: nosniff`)
  assert.equal(response.headers.get('x-frame-options'), 'DENY', `${what}: never framed`)
  assert.equal(response.headers.get('content-security-policy'), "default-src 'none';frame-ancestors 'none'", `${what}: CSP`)
  assert.equal(response.headers.get('referrer-policy'), 'no-referrer', `${what}: referrer`)
  assert.match(response.headers.get('strict-transport-security') ?? '', /max-age=31536000/, `${what}: HSTS`)
  assert.equal(response.headers.get('x-powered-by'), null, `${what}: no x-powered-by`)
}

describe('security headers, and no-store on token and signed-in answers', () => {
  let service: TestService
  before(async () => { service = await startTestService({ threads: 1, harness: { strategy: 'tollbooth', shedding: true, apiRoutes: labRoutes } }) })
  after(async () => { await service.close() })

  it('every response carries the standard security headers: routes, errors, 404, 405, operations, the OpenAPI document', async () => {
    const email = uniqueEmail('headers')
    const responses: Array<[string, JsonResponse]> = [
      ['register', await request(service, 'POST', '/api/v1/auth/register', { body: { email, password: 'correct horse battery' } })],
      ['a 400', await request(service, 'POST', '/api/v1/auth/login', { body: { email } })],
      ['a 404', await request(service, 'GET', '/no/such/route')],
      ['a 405', await request(service, 'DELETE', '/api/v1/auth/login')],
      ['posts', await request(service, 'GET', '/api/v1/posts')],
      ['healthz', await request(service, 'GET', '/healthz')],
      ['readyz', await request(service, 'GET', '/readyz')],
      ['metrics', await request(service, 'GET', '/metrics')],
      ['openapi', await request(service, 'GET', '/openapi.json')],
      ['jwks', await request(service, 'GET', '/.well-known/jwks.json')],
    ]
    assert.deepEqual(responses.map(([what, response]) => [what, response.status]), [
      ['register', 201], ['a 400', 400], ['a 404', 404], ['a 405', 405], ['posts', 200], ['healthz', 200], ['readyz', 200], ['metrics', 200], ['openapi', 200], ['jwks', 200],
    ])
    for (const [what, response] of responses) assertSecurityHeaders(response, what)
    // The OpenAPI document stays plain JSON for its consumers.
    const openapi = responses.find(([what]) => what === 'openapi')?.[1]
    assert.equal(openapi?.body.openapi, '3.1.0')
  })

  it('register, login, refresh and the lab login answer Cache-Control: no-store (errors too); other routes keep theirs', async () => {
    const email = uniqueEmail('nostore')
    const password = 'correct horse battery'
    const registered = await request(service, 'POST', '/api/v1/auth/register', { body: { email, password } })
    const login = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
    const refresh = await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: login.body.refreshToken } })
    const lab = await request(service, 'POST', '/api/v1/lab/login?hash=full', { body: { email, password } })
    const wrong = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password: 'not the password' } })
    for (const [what, response, status] of [['register', registered, 201], ['login', login, 200], ['refresh', refresh, 200], ['lab login', lab, 200], ['failed login', wrong, 401]] as const) {
      assert.equal(response.status, status, what)
      assert.equal(response.headers.get('cache-control'), 'no-store', `${what}: no-store`)
      assert.equal(response.headers.get('pragma'), 'no-cache', `${what}: pragma`)
    }
    assert.equal(typeof login.body.accessToken, 'string')
    const jwks = await request(service, 'GET', '/.well-known/jwks.json')
    assert.match(jwks.headers.get('cache-control') ?? '', /^public, max-age=\d+$/, 'the JWK Set stays cacheable')
    assert.equal((await request(service, 'GET', '/api/v1/posts')).headers.get('cache-control'), null)
  })

  it('every signed-in route, read from the OpenAPI document, answers no-store, with a token and without', async () => {
    const document = (await request(service, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, { security?: unknown[] }>> }
    const signedIn = Object.entries(document.paths).flatMap(([path, operations]) => Object.entries(operations)
      .filter(([, operation]) => JSON.stringify(operation.security ?? []).includes('bearerAuth'))
      .map(([method, operation]) => ({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000'), operation })))
    assert.ok(signedIn.length >= 7, `the signed-in routes: ${signedIn.map(({ method, path }) => `${method} ${path}`).join(', ')}`)
    for (const { method, path } of signedIn) {
      // A session of its own: logout-all and delete end theirs.
      const token = (await registerUser(service)).body.accessToken as string
      const body = method === 'GET' || method === 'DELETE' ? undefined : {}
      for (const [what, response] of [['with a token', await request(service, method, path, { token, ...(body === undefined ? {} : { body }) })], ['without', await request(service, method, path, body === undefined ? {} : { body })]] as const) {
        assert.equal(response.headers.get('cache-control'), 'no-store', `${method} ${path} ${what} (${response.status}): no-store`)
        assert.equal(response.headers.get('pragma'), 'no-cache', `${method} ${path} ${what}: pragma`)
      }
    }
  })
})
