/**
 * Every error has the registry's shape, including the ones Fastify or node would answer
 * on their own: a request node's parser refuses, a method the route lacks, a body that is
 * not JSON, a request arriving while the service shuts down.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, describe, it } from 'node:test'
import { slowBcryptHash } from '../helpers/policies.js'
import { nodeRequest, parseResponses, rawConnection, rawExchange, type NodeResponse, type RawResponse } from '../helpers/net/raw-http.js'
import { registerUser, request, startTestService, type TestService } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

function assertRegistryShape (response: RawResponse, status: number, code: string): void {
  assert.equal(response.status, status)
  assert.match(response.headers['content-type'] ?? '', /^application\/json/)
  assert.deepEqual(Object.keys(response.body as object), ['error'])
  assert.equal(response.body.error.code, code)
  assert.equal(typeof response.body.error.message, 'string')
}

describe('errors node\'s HTTP parser raises, answered in the registry\'s shape', () => {
  let service: TestService
  before(async () => { service = await startTestService() })
  after(async () => { await service.close() })

  const malformed: Array<[string, string, number, string]> = [
    ['a Content-Length that is not a number', 'POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400, 'REQUEST_MALFORMED'],
    ['two different Content-Lengths', 'POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab', 400, 'REQUEST_MALFORMED'],
    ['a request line that is not HTTP', 'HELLO THERE\r\n\r\n', 400, 'REQUEST_MALFORMED'],
    ['headers over the size limit', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
  ]
  for (const [what, bytes, status, code] of malformed) {
    it(`${what}: ${status} ${code}`, async () => {
      assertRegistryShape(await rawExchange(service.url, bytes), status, code)
    })
  }

  it('a URL that cannot be decoded: 400 REQUEST_MALFORMED', async () => {
    const response = await rawExchange(service.url, 'GET /api/v1/posts%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    assertRegistryShape(response, 400, 'REQUEST_MALFORMED')
  })

  it('keeps serving after them', async () => {
    assert.equal((await request(service, 'GET', '/healthz')).status, 200)
  })
})

describe('bodies that are not JSON', () => {
  let service: TestService
  before(async () => { service = await startTestService() })
  after(async () => { await service.close() })

  const json = JSON.stringify({ email: 'plain@example.com', password: 'password123' })
  const cases: Array<[string, Record<string, string>]> = [
    ['text/plain, even when it looks like JSON', { 'content-type': 'text/plain' }],
    ['text/plain with a charset', { 'content-type': 'text/plain; charset=utf-8' }],
    ['application/x-www-form-urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['no content-type at all', {}],
  ]
  for (const [what, headers] of cases) {
    it(`${what}: 415 UNSUPPORTED_MEDIA_TYPE, before any hash`, async () => {
      const before = service.engine.stats().completed
      // A byte body, so fetch adds no content-type of its own.
      const response = await fetch(`${service.url}/api/v1/auth/register`, { method: 'POST', headers, body: new TextEncoder().encode(json) })
      assert.equal(response.status, 415)
      assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'UNSUPPORTED_MEDIA_TYPE')
      assert.equal(service.engine.stats().completed, before)
    })
  }
})

describe('a method the route does not have', () => {
  let service: TestService
  before(async () => { service = await startTestService() })
  after(async () => { await service.close() })

  const cases: Array<[string, string, string]> = [
    ['DELETE', '/api/v1/posts', 'GET, HEAD, POST'],
    ['PUT', '/api/v1/auth/login', 'POST'],
    ['POST', '/healthz', 'GET, HEAD'],
    ['PATCH', '/api/v1/posts?limit=3', 'GET, HEAD, POST'],
    // A static path beside a parametric one: `options` is not taken for a passkey's id.
    ['PATCH', '/api/v1/me/passkeys/options', 'POST'],
    ['DELETE', '/api/v1/me/passkeys/options', 'POST'],
  ]
  for (const [method, path, allow] of cases) {
    it(`${method} ${path}: 405 METHOD_NOT_ALLOWED with Allow: ${allow}`, async () => {
      const response = await request(service, method, path)
      assert.equal(response.status, 405)
      assert.equal(response.body.error.code, 'METHOD_NOT_ALLOWED')
      assert.equal(response.headers.get('allow'), allow)
    })
  }

  it('an unknown path is still 404 NOT_FOUND', async () => {
    const response = await request(service, 'DELETE', '/api/v1/nothing-here')
    assert.equal(response.status, 404)
    assert.equal(response.body.error.code, 'NOT_FOUND')
    assert.equal(response.headers.get('allow'), null)
  })
})

function assertMethodNotAllowed (response: NodeResponse, method: string, allow: string): void {
  assert.equal(response.status, 405, method)
  assert.equal(response.headers.allow, allow, method)
  // HEAD answers carry no body.
  if (method !== 'HEAD') {
    assert.equal(response.body.error.code, 'METHOD_NOT_ALLOWED', method)
    assert.match(response.headers['content-type'] ?? '', /^application\/json/)
  }
}

describe('methods no route declares, on real sockets', () => {
  let service: TestService
  before(async () => { service = await startTestService() })
  after(async () => { await service.close() })

  // Every method node's parser accepts; CONNECT is its own event in node, tested below.
  const methods = http.METHODS.filter((method) => method !== 'CONNECT')

  it('every method but POST on POST /api/v1/auth/login: 405 with Allow: POST', async () => {
    for (const method of methods.filter((method) => method !== 'POST')) {
      assertMethodNotAllowed(await nodeRequest(service.url, method, '/api/v1/auth/login'), method, 'POST')
    }
  })

  it('every method on an unknown path: 404 NOT_FOUND without Allow', async () => {
    for (const method of methods) {
      const response = await nodeRequest(service.url, method, '/api/v1/nothing-here')
      assert.equal(response.status, 404, method)
      assert.equal(response.headers.allow, undefined, method)
      if (method !== 'HEAD') assert.equal(response.body.error.code, 'NOT_FOUND', method)
    }
  })

  // Fastify reads the body of an unrouted request with a body method before its not-found
  // handler: QUERY without a content-type was a 400, QUERY with JSON that does not parse a 400.
  const withBodies: Array<[string, string, Record<string, string>, string | undefined]> = [
    ['QUERY without a content-type', 'QUERY', {}, undefined],
    ['QUERY with a JSON body', 'QUERY', { 'content-type': 'application/json' }, '{"email":"a@example.com"}'],
    ['QUERY with a body that is not JSON', 'QUERY', { 'content-type': 'application/json' }, '{not json'],
    ['PUT with a text/plain body', 'PUT', { 'content-type': 'text/plain' }, 'hello'],
    ['PROPFIND with an XML body', 'PROPFIND', { 'content-type': 'application/xml', depth: '1' }, '<propfind xmlns="DAV:"/>'],
    ['SEARCH with a body', 'SEARCH', { 'content-type': 'application/json' }, '{}'],
  ]
  for (const [what, method, headers, body] of withBodies) {
    it(`${what} on /api/v1/posts: 405 with Allow, before the body is read`, async () => {
      assertMethodNotAllowed(await nodeRequest(service.url, method, '/api/v1/posts', { headers, ...(body === undefined ? {} : { body }) }), method, 'GET, HEAD, POST')
    })
  }

  it('QUERY on an unknown path: 404, not the 400 for its missing content-type', async () => {
    const response = await nodeRequest(service.url, 'QUERY', '/nothing-here')
    assert.equal(response.status, 404)
    assert.equal(response.body.error.code, 'NOT_FOUND')
  })

  it('the declared methods still work beside them', async () => {
    assert.equal((await nodeRequest(service.url, 'GET', '/api/v1/posts?limit=1')).status, 200)
    assert.equal((await nodeRequest(service.url, 'HEAD', '/healthz')).status, 200)
  })

  it('CONNECT to a known path: 405 with Allow, and the connection closed', async () => {
    const response = await rawExchange(service.url, 'CONNECT /api/v1/posts HTTP/1.1\r\nHost: x\r\n\r\n')
    assertRegistryShape(response, 405, 'METHOD_NOT_ALLOWED')
    assert.equal(response.headers.allow, 'GET, HEAD, POST')
  })

  it('CONNECT to a host and port (a proxy tunnel): 404, no tunnel', async () => {
    const response = await rawExchange(service.url, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')
    assertRegistryShape(response, 404, 'NOT_FOUND')
    assert.equal(response.headers.allow, undefined)
  })
})

describe('a request that arrives while the service shuts down', () => {
  it('gets 503 SHUTTING_DOWN with Retry-After and connection: close, in the registry\'s shape', async (t) => {
    // A login deadline out of reach: on a loaded machine the blocker can outlast the default 2 s.
    const service = await startTestService({ threads: 1, config: { loginDeadlineMs: 120_000 } })
    // A failed check below must not leave the socket and the service open (the file would never exit).
    t.after(async () => { socket.destroy(); if (service.app.server.listening) await service.close() })
    const { email, password } = await registerUser(service)
    // Hold the only hash thread (a legacy bcrypt cost-12 hash, made without its cost on this loop), so a login stays in flight.
    const blocker = service.engine.verify('blocker', slowBcryptHash(12))
    const { socket, received, closed } = rawConnection(service.url)
    const body = JSON.stringify({ email, password })
    socket.write(`POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
    await waitFor('the login waiting for the thread, or an answer to it', () => service.engine.stats().queued >= 1 || received().length > 0, { intervalMs: 5 })
    assert.equal(service.engine.stats().queued, 1, `the login waits for the thread (received: ${received()})`)

    const closing = service.app.close()
    await waitFor('the listener closed', () => !service.app.server.listening, { intervalMs: 5 })
    // The same keep-alive connection, still open because its first request is in flight.
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
    await blocker
    await closed
    await closing
    await service.engine.close()
    await service.db.drop()

    const [login, late] = parseResponses(received())
    assert.equal(login?.status, 200, 'the request in flight is finished')
    assert.ok(late !== undefined, received())
    assertRegistryShape(late, 503, 'SHUTTING_DOWN')
    assert.equal(late.headers['retry-after'], '1')
    assert.equal(late.headers.connection, 'close')
  })
})
