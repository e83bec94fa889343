/**
 * The in-flight cap answers in the HTTP server's request handler, before Fastify
 * (in-flight-gate.ts): its refusal, what it counts, shutdown, and the server Fastify's
 * `serverFactory` hands over, which must be the one Fastify would have made.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import type http from 'node:http'
import type net from 'node:net'
import { after, before, describe, it } from 'node:test'
import Fastify, { type FastifyHttpOptions, type FastifyServerOptions } from 'fastify'
import { createError } from '../../src/errors.js'
import { gatedServerFactory, InFlightGate } from '../../src/overload/in-flight-gate.js'
import { holdQueries } from '../helpers/database.js'
import { nodeRequest, parseResponses, rawConnection, type RawConnection } from '../helpers/net/raw-http.js'
import { registerUser, request, startTestService, type TestService } from '../helpers/service.js'
import { nextTurn, waitFor } from '../helpers/wait.js'

/** Headers that belong to one answer rather than to every answer: left out when comparing the rest. */
const ownHeaders = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'retry-after', 'cache-control', 'pragma'])

function everyAnswersHeaders (headers: Headers): Record<string, string> {
  return Object.fromEntries([...headers].filter(([name]) => !ownHeaders.has(name)))
}

async function metricsText (service: TestService): Promise<string> {
  return await service.app.metrics.render()
}

/**
 * Keeps one capped request in flight: a GET /api/v1/posts held at the database (admitted and
 * counted by the gate, then waiting in its handler). `release` lets it finish.
 */
async function holdOneInFlight (service: TestService): Promise<{ release: () => Promise<void> }> {
  const hold = holdQueries(service.db.pool, /FROM posts/, 1)
  const answered = request(service, 'GET', '/api/v1/posts')
  await hold.held
  await waitFor('the held request to be counted', async () => (await metricsText(service)).includes('tollbooth_api_requests_in_flight{counted="capped"} 1\n'))
  return {
    async release () {
      hold.release()
      assert.equal((await answered).status, 200)
    },
  }
}

describe('the in-flight gate, in front of Fastify', () => {
  let service: TestService
  before(async () => { service = await startTestService({ config: { maxInFlight: 1, maxEventLoopDelayMs: 0 } }) })
  after(async () => { await service.close() })

  it('refuses past the cap with the overload answer and the headers of every answer, counted as shed and never reaching Fastify', async () => {
    const served = await request(service, 'GET', '/api/v1/posts')
    assert.equal(served.status, 200)
    const held = await holdOneInFlight(service)
    try {
      const refused = await request(service, 'GET', '/api/v1/posts')
      assert.equal(refused.status, 503)
      assert.equal(refused.headers.get('retry-after'), '1')
      assert.equal(refused.headers.get('content-type'), 'application/json; charset=utf-8')
      assert.deepEqual(refused.body, { error: { code: 'SERVICE_OVERLOADED', message: createError('SERVICE_OVERLOADED').message } })
      // A refusal does not know its route: it carries the token routes' no-store too.
      assert.equal(refused.headers.get('cache-control'), 'no-store')
      assert.equal(refused.headers.get('pragma'), 'no-cache')
      // The security headers, from the one set Fastify's hook sends: the same, whatever is added to it later.
      const common = everyAnswersHeaders(served.headers)
      assert.equal(common['x-content-type-options'], 'nosniff', 'the comparison has the security headers to compare')
      assert.deepEqual(everyAnswersHeaders(refused.headers), common)

      const metrics = await metricsText(service)
      assert.match(metrics, /tollbooth_requests_shed_total\{reason="in_flight"\} 1\n/)
      // Fastify's onResponse hook never saw it: no request of the API answered 503 in the histogram.
      assert.doesNotMatch(metrics, /tollbooth_http_request_duration_seconds_count\{[^}]*status="503"/)
    } finally {
      await held.release()
    }
    await waitFor('the place freed', async () => (await request(service, 'GET', '/api/v1/posts')).status === 200)
  })

  it('counts by the request line: the API under the cap, own-admission POSTs apart, the rest never, and no spelling of an API route escapes', async () => {
    const { email } = await registerUser(service)
    const held = await holdOneInFlight(service)
    try {
      for (const path of ['/healthz', '/readyz', '/metrics', '/openapi.json', '/.well-known/jwks.json', '/healthz?probe=%41']) {
        assert.equal((await request(service, 'GET', path)).status, 200, `${path} is never shed`)
      }
      // A login (with a query) is counted apart and reaches its route: a wrong password, not a refusal.
      const login = await request(service, 'POST', '/api/v1/auth/login?from=test', { body: { email, password: 'not the password' } })
      assert.equal(login.status, 401, JSON.stringify(login.body))
      const { port } = new URL(service.url)
      const capped: Array<[string, string]> = [
        ['GET', '/api/v1/no/such/route'],
        // Fastify's router decodes the escape and takes the absolute URL's path: /api/v1/posts both times.
        ['GET', '/%61pi/v1/posts'],
        ['GET', `http://127.0.0.1:${port}/api/v1/posts`],
        // Only the login as written is counted apart.
        ['POST', '/api/v1/auth/%6cogin'],
        ['GET', '/api/v1/auth/login'],
      ]
      for (const [method, target] of capped) {
        // node frames a body on a POST only (a GET's would be read as the next request).
        const response = await nodeRequest(service.url, method, target, method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {})
        assert.equal(response.status, 503, `${method} ${target}`)
        assert.equal(response.body.error.code, 'SERVICE_OVERLOADED', `${method} ${target}`)
      }
    } finally {
      await held.release()
    }
    // Once free, the escaped spelling is the API route it stands for.
    await waitFor('the place freed', async () => (await nodeRequest(service.url, 'GET', '/%61pi/v1/posts')).status === 200)
  })
})

describe('the in-flight gate and a body that comes slowly', () => {
  let service: TestService
  before(async () => { service = await startTestService({ config: { maxInFlight: 2, maxEventLoopDelayMs: 0 } }) })
  after(async () => { await service.close() })

  it('counts a request whose body has not come out of the cap until it has: slow senders hold connections, not places', async () => {
    // Three times the cap of requests that send their headers and part of their body, then nothing.
    const body = '{"refreshToken":"not-a-token-but-long-enough-to-be-read-0123456789"}'
    const slow: RawConnection[] = []
    for (let i = 0; i < 6; i++) {
      const connection = rawConnection(service.url)
      // One at a time, each set aside before the next comes (the service is in this process).
      const read = once(service.app.server, 'request')
      connection.socket.write(`POST /api/v1/auth/refresh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`)
      slow.push(connection)
      await read
      await nextTurn()
    }
    try {
      await waitFor('the slow requests out of the count', async () => (await metricsText(service)).includes('tollbooth_api_requests_in_flight{counted="capped"} 0\n'))
      assert.deepEqual(slow.map((connection) => connection.received()), Array(6).fill(''), 'none of them refused')
      // Served, not refused: the slow bodies are out of the count.
      for (let i = 0; i < 5; i++) assert.equal((await request(service, 'GET', '/api/v1/posts')).status, 200)
      assert.match(await metricsText(service), /tollbooth_api_requests_in_flight\{counted="capped"\} 0\n/)
      // A body that comes at last is counted again and answered.
      const [first] = slow
      assert.ok(first !== undefined)
      first.socket.write(body.slice(10))
      await waitFor('the completed request answered', () => parseResponses(first.received()).length === 1)
      assert.deepEqual(parseResponses(first.received()).map((response) => response.status), [401], first.received())
    } finally {
      for (const connection of slow) connection.socket.destroy()
    }
    await waitFor('nothing counted once they are gone', async () => (await metricsText(service)).includes('tollbooth_api_requests_in_flight{counted="capped"} 0\n'))
  })

  it('refuses a request whose body came late if the cap is full by then: set aside, it does not come back past the cap', async () => {
    const body = '{"refreshToken":"not-a-token-but-long-enough-to-be-read-0123456789"}'
    const late = rawConnection(service.url)
    const read = once(service.app.server, 'request')
    late.socket.write(`POST /api/v1/auth/refresh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`)
    const hold = holdQueries(service.db.pool, /FROM posts/, 2)
    const answered: Array<Promise<{ status: number }>> = []
    const shed = async (): Promise<number> => Number(/tollbooth_requests_shed_total\{reason="in_flight"\} (\d+)\n/.exec(await metricsText(service))?.[1])
    const shedBefore = await shed()
    try {
      // Admitted (the service is in this process: it reads the request), then set aside a turn later.
      await read
      await nextTurn()
      assert.equal(late.received(), '', 'admitted, not refused')
      assert.match(await metricsText(service), /tollbooth_api_requests_in_flight\{counted="capped"\} 0\n/)
      // The cap (2) filled meanwhile by two reads held at the database.
      answered.push(request(service, 'GET', '/api/v1/posts'), request(service, 'GET', '/api/v1/posts'))
      await hold.held
      assert.match(await metricsText(service), /tollbooth_api_requests_in_flight\{counted="capped"\} 2\n/)
      late.socket.write(body.slice(10))
      await waitFor('the late request answered', () => parseResponses(late.received()).length === 1)
      const [refusal] = parseResponses(late.received())
      assert.equal(refusal?.status, 503, late.received())
      assert.equal(refusal.headers['retry-after'], '1')
      assert.equal(refusal.body.error.code, 'SERVICE_OVERLOADED')
      assert.match(await metricsText(service), /tollbooth_api_requests_in_flight\{counted="capped"\} 2\n/, 'the refused request never counted past the cap')
      assert.equal(await shed(), shedBefore + 1, 'counted as shed, once')
    } finally {
      hold.release()
      late.socket.destroy()
    }
    assert.deepEqual((await Promise.all(answered)).map((response) => response.status), [200, 200])
    await waitFor('nothing counted once they are done', async () => (await metricsText(service)).includes('tollbooth_api_requests_in_flight{counted="capped"} 0\n'))
  })

  it('counts a GET that announces a body it never sends while Fastify serves it: such requests cannot pass the cap', async () => {
    // Fastify runs a GET's handler without reading its body: two of them, held in their handler
    // at the database, with the body their headers announce never sent.
    const hold = holdQueries(service.db.pool, /FROM posts/, 2)
    const connections = [rawConnection(service.url), rawConnection(service.url)]
    try {
      for (const connection of connections) connection.socket.write('GET /api/v1/posts HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n')
      await hold.held
      // Past the turn in which a request whose body is missing is set aside.
      await nextTurn()
      assert.match(await metricsText(service), /tollbooth_api_requests_in_flight\{counted="capped"\} 2\n/)
      const refused = await request(service, 'GET', '/api/v1/posts')
      assert.equal(refused.status, 503, 'the cap of 2 is full')
    } finally {
      hold.release()
      for (const connection of connections) connection.socket.destroy()
    }
    await waitFor('nothing counted once they are gone', async () => (await metricsText(service)).includes('tollbooth_api_requests_in_flight{counted="capped"} 0\n'))
  })
})

describe('the in-flight gate and a GET that announces a body, behind a hook that queries', () => {
  let service: TestService
  before(async () => { service = await startTestService({ config: { maxInFlight: 2, maxEventLoopDelayMs: 0, sessionCheckCacheMs: 0 } }) })
  after(async () => { await service.close() })

  // Fastify reads a body only for a request with a Content-Type (handle-request.js): a GET's
  // never, a DELETE's without one neither; each runs its handler without the body.
  for (const target of ['GET /api/v1/me', 'DELETE /api/v1/me/sessions/00000000-0000-4000-8000-000000000000']) {
    it(`counts ${target} with a Content-Length and no body while its session is checked: the turns an onRequest hook waits on the database do not set it aside`, async () => {
      const { body } = await registerUser(service)
      // The token's session is checked in onRequest (a query, the cache off), before Fastify
      // would count a request set aside again; two of them held at that query.
      const hold = holdQueries(service.db.pool, /FROM sessions WHERE id = \$1 AND user_id/, 2)
      const connections = [rawConnection(service.url), rawConnection(service.url)]
      try {
        for (const connection of connections) connection.socket.write(`${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${String(body.accessToken)}\r\nContent-Length: 5\r\n\r\n`)
        await hold.held
        await nextTurn()
        assert.match(await metricsText(service), /tollbooth_api_requests_in_flight\{counted="capped"\} 2\n/)
        assert.equal((await request(service, 'GET', '/api/v1/posts')).status, 503, 'the cap of 2 is full')
      } finally {
        hold.release()
        for (const connection of connections) connection.socket.destroy()
      }
      await waitFor('nothing counted once they are gone', async () => (await metricsText(service)).includes('tollbooth_api_requests_in_flight{counted="capped"} 0\n'))
    })
  }
})

describe('the in-flight gate and a connection that dies', () => {
  let service: TestService
  before(async () => { service = await startTestService({ config: { maxInFlight: 64, maxEventLoopDelayMs: 0 } }) })
  after(async () => { await service.close() })

  async function inFlightNow (): Promise<string[]> {
    return (await metricsText(service)).split('\n').filter((line) => line.startsWith('tollbooth_api_requests_in_flight{'))
  }
  const none = ['tollbooth_api_requests_in_flight{counted="capped"} 0', 'tollbooth_api_requests_in_flight{counted="own_admission"} 0']

  it('forgets the pipelined requests still queued when their connection is reset: nothing stays counted', async () => {
    // Requests sent on one connection without waiting for answers, then a reset: Node queues the
    // later answers without a socket, and those never close. Counted on their response's close
    // alone, each reset burst kept its requests in flight for good (a few, and every capped route
    // answered 503 until a restart).
    const login = JSON.stringify({ email: 'nobody@example.com', password: 'not a password' })
    for (let round = 0; round < 3; round++) {
      const connection = rawConnection(service.url)
      await once(connection.socket, 'connect')
      connection.socket.write(
        'GET /api/v1/posts HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(20) +
        `POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(login)}\r\n\r\n${login}`.repeat(3) +
        'GET /api/v1/posts HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(20)
      )
      await new Promise((resolve) => { setImmediate(resolve) })
      connection.socket.resetAndDestroy()
      await connection.closed
    }
    await waitFor('every request of the reset connections forgotten', async () => JSON.stringify(await inFlightNow()) === JSON.stringify(none))
    assert.equal((await request(service, 'GET', '/api/v1/posts')).status, 200)
  })

  it('adds no close listener per request to a connection, pipelined or kept alive', async () => {
    const accepted = once(service.app.server, 'connection') as Promise<[net.Socket]>
    const connection = rawConnection(service.url)
    const [serverSide] = await accepted
    connection.socket.write('GET /api/v1/posts HTTP/1.1\r\nHost: x\r\n\r\n')
    await waitFor('the first answer', () => parseResponses(connection.received()).length === 1, { intervalMs: 1 })
    const afterOne = serverSide.listenerCount('close')
    // Thirty requests in flight at once on the connection: a listener apiece would pass Node's ten and warn.
    const warnings: string[] = []
    const onWarning = (warning: Error): void => { warnings.push(warning.name) }
    process.on('warning', onWarning)
    let mostListeners = 0
    const onNewListener = (event: string | symbol): void => {
      if (event === 'close') mostListeners = Math.max(mostListeners, serverSide.listenerCount('close') + 1)
    }
    serverSide.on('newListener', onNewListener)
    try {
      connection.socket.write('GET /api/v1/posts HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(30))
      await waitFor('the pipelined answers', () => parseResponses(connection.received()).length === 31, { intervalMs: 1 })
      await new Promise((resolve) => { setImmediate(resolve) })
    } finally {
      process.off('warning', onWarning)
      serverSide.off('newListener', onNewListener)
    }
    assert.deepEqual(warnings.filter((name) => name === 'MaxListenersExceededWarning'), [])
    assert.ok(mostListeners <= afterOne + 2, `at most ${mostListeners} close listeners at once, against ${afterOne} for one request`)
    assert.equal(serverSide.listenerCount('close'), afterOne, 'as many after 31 requests as after one')
    assert.deepEqual(await inFlightNow(), none)
    connection.socket.destroy()
  })
})

describe('the in-flight gate at shutdown', () => {
  it('steps aside: a request past the cap on an open connection gets SHUTTING_DOWN and connection: close', async (t) => {
    const service = await startTestService({ config: { maxInFlight: 1, maxEventLoopDelayMs: 0 } })
    const connection = rawConnection(service.url)
    t.after(async () => { connection.socket.destroy(); if (service.app.server.listening) await service.close() })
    const token = (await registerUser(service)).body.accessToken as string
    // A GET /me held at the database: the cap's one place, on a keep-alive connection that stays open through the close.
    const lookups = holdQueries(service.db.pool, /FROM users WHERE id = \$1/, 1)
    connection.socket.write(`GET /api/v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`)
    await lookups.held

    const closing = service.app.close()
    await waitFor('the server to stop listening', () => !service.app.server.listening)
    const handled = once(service.app.server, 'request')
    connection.socket.write('GET /api/v1/posts HTTP/1.1\r\nHost: x\r\n\r\n')
    await handled
    lookups.release()
    await connection.closed
    await closing
    await service.engine.close()
    await service.db.drop()

    const [me, late] = parseResponses(connection.received())
    assert.equal(me?.status, 200, 'the request in flight is finished')
    assert.equal(late?.status, 503, connection.received())
    assert.equal(late.body.error.code, 'SHUTTING_DOWN')
    assert.equal(late.headers.connection, 'close')
  })
})

/** A node HTTP server's settings: its own fields with plain values, the classes it makes requests with, who listens to what. */
function serverSettings (server: http.Server, options: { listening: boolean }): Record<string, unknown> {
  const settings: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(server)) {
    // Underscored fields of a listening server are the state of its socket, not settings.
    if (options.listening && key.startsWith('_')) continue
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) settings[key] = value
  }
  for (const symbol of Object.getOwnPropertySymbols(server)) {
    const value = (server as unknown as Record<symbol, unknown>)[symbol]
    if (typeof value === 'function') settings[String(symbol)] = value
  }
  if (!options.listening) settings.listeners = server.eventNames().map((name) => [String(name), server.listenerCount(name)])
  return settings
}

describe('the server made through the gate is the one Fastify makes', () => {
  const optionSets: Array<[string, FastifyHttpOptions<http.Server>]> = [
    ['Fastify\'s defaults', {}],
    ['every server setting Fastify applies, and node\'s own through `http`', {
      keepAliveTimeout: 5_000,
      requestTimeout: 30_000,
      connectionTimeout: 10_000,
      maxRequestsPerSocket: 100,
      http: { maxHeaderSize: 8192, connectionsCheckingInterval: 2_000, headersTimeout: 20_000, requireHostHeader: false, joinDuplicateHeaders: true, highWaterMark: 1024, noDelay: false, keepAlive: true, keepAliveInitialDelay: 1_000, rejectNonStandardBodyWrites: true },
    }],
  ]
  const gate = new InFlightGate({ maxInFlight: 1, ownAdmissionPaths: new Set(), refusal: { headers: {}, body: '' }, onRefuse: () => {} })
  for (const [what, options] of optionSets) {
    it(`with ${what}`, async () => {
      const plain = Fastify(options)
      for (const factory of [gatedServerFactory(gate), gatedServerFactory(undefined)]) {
        const made = Fastify({ ...options, serverFactory: factory })
        assert.deepEqual(serverSettings(made.server, { listening: false }), serverSettings(plain.server, { listening: false }))
        await made.close()
      }
      await plain.close()
    })
  }

  it('the app\'s server has the settings of its own Fastify options', async () => {
    const service = await startTestService({ config: { maxInFlight: 1 } })
    try {
      // Fastify's types leave out some of the options initialConfig holds.
      const { connectionTimeout, keepAliveTimeout, maxRequestsPerSocket, requestTimeout } = service.app.initialConfig as Pick<FastifyServerOptions, 'connectionTimeout' | 'keepAliveTimeout' | 'maxRequestsPerSocket' | 'requestTimeout'>
      const plain = Fastify({ connectionTimeout, keepAliveTimeout, maxRequestsPerSocket, requestTimeout })
      await plain.listen({ host: '127.0.0.1', port: 0 })
      try {
        assert.equal(service.app.server.requestTimeout, 60_000, 'the app\'s own setting is there')
        assert.deepEqual(serverSettings(service.app.server, { listening: true }), serverSettings(plain.server, { listening: true }))
      } finally {
        await plain.close()
      }
    } finally {
      await service.close()
    }
  })

  it('refuses TLS and HTTP/2, which it would not set up as Fastify does', () => {
    assert.throws(() => Fastify({ http2: true, serverFactory: gatedServerFactory(gate) } as FastifyServerOptions), TypeError)
  })

  it('refuses a cap below 1 (0 means no gate at all)', () => {
    assert.throws(() => new InFlightGate({ maxInFlight: 0, ownAdmissionPaths: new Set(), refusal: { headers: {}, body: '' }, onRefuse: () => {} }), TypeError)
  })
})
