/**
 * HttpTarget (the lab's HTTP client), with each of its clients (undici, and the lab's own raw
 * one): what it reads from a response (status, JSON or text body, Retry-After, Location, Set-Cookie), what it sends (JSON, a form),
 * and that a server that does not answer, or stops in the middle of a body, is counted as a
 * timeout after the request timeout, not waited for.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { HttpTarget, httpClients } from '../../src/http/index.js'

for (const client of httpClients) {
  describe(`HttpTarget timeouts (${client})`, () => {
    let server: http.Server
    let url: string
    const stalled = new Set<http.ServerResponse>()

    before(async () => {
      server = http.createServer((request, response) => {
        stalled.add(response)
        if (request.url === '/half-body') {
          response.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' })
          response.write('{"partial":')
        }
        // '/silent': never answers.
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    })
    after(async () => {
      for (const response of stalled) response.destroy()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })

    for (const path of ['/silent', '/half-body']) {
      it(`gives up on ${path} after the request timeout and counts a timeout`, async () => {
        const target = new HttpTarget(url, { connections: 1, timeoutMs: 300, client })
        const started = performance.now()
        const response = await target.send({ method: 'GET', path })
        const elapsedMs = performance.now() - started
        await target.destroy()
        assert.equal(response.failure, 'timeout', JSON.stringify(response))
        assert.equal(response.status, null)
        assert.ok(elapsedMs >= 250, `gave up after ${elapsedMs} ms, before the timeout`)
        assert.ok(elapsedMs < 10_000, `gave up after ${elapsedMs} ms`)
      })
    }
  })

  describe(`HttpTarget responses (${client})`, () => {
    let server: http.Server
    let url: string
    let seen: { method?: string, url?: string, headers: http.IncomingHttpHeaders, body: string } = { headers: {}, body: '' }

    before(async () => {
      server = http.createServer((request, response) => {
        let body = ''
        request.setEncoding('utf8')
        request.on('data', (chunk: string) => { body += chunk })
        request.on('end', () => {
          seen = { method: request.method, url: request.url, headers: request.headers, body }
          switch (request.url) {
            case '/json':
              response.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' })
              response.end(JSON.stringify({ hello: 'wörld', n: 1 }))
              break
            case '/json-chunked':
              // No content-length: the body comes in several chunks.
              response.writeHead(201, { 'content-type': 'application/json' })
              response.write('{"parts":[1,')
              setTimeout(() => { response.end('2,3]}') }, 20)
              break
            case '/refused':
              response.writeHead(503, { 'content-type': 'application/json', 'Retry-After': '3' })
              response.end('{"error":{"code":"SERVICE_OVERLOADED","message":"busy"}}')
              break
            case '/refused-until':
              response.writeHead(429, { 'retry-after': new Date(Date.now() + 60_000).toUTCString() })
              response.end()
              break
            case '/text':
              response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
              response.end('metric_total 42\n')
              break
            case '/form':
              // A page's form posted: the browser is sent on, with two cookies.
              response.writeHead(303, { location: '/next?step=2', 'set-cookie': ['_session=abc; path=/; httponly', '_session.sig=xyz; path=/'] })
              response.end()
              break
            case '/broken-json':
              response.writeHead(200, { 'content-type': 'application/json' })
              response.end('{"oops"')
              break
            default:
              response.writeHead(204)
              response.end()
          }
        })
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    })
    after(async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })

    it('parses a JSON body, whole or in chunks', async () => {
      const target = new HttpTarget(url, { connections: 2, timeoutMs: 5_000, client })
      const [whole, chunked] = await Promise.all([target.send({ method: 'GET', path: '/json' }), target.send({ method: 'GET', path: '/json-chunked' })])
      await target.close()
      assert.deepEqual(whole, { status: 200, failure: null, ok: true, body: { hello: 'wörld', n: 1 }, retryAfterSeconds: null, detail: null })
      assert.deepEqual(chunked.body, { parts: [1, 2, 3] })
      assert.equal(chunked.status, 201)
    })

    it('sends the token, a JSON body and extra headers', async () => {
      const target = new HttpTarget(url, { connections: 1, timeoutMs: 5_000, client })
      const response = await target.send({ method: 'POST', path: '/echo?x=1', token: 'abc', body: { email: 'a@example.com' }, headers: { 'x-lab': 'yes' } })
      await target.close()
      assert.equal(response.status, 204)
      assert.equal(response.ok, true)
      assert.equal(seen.method, 'POST')
      assert.equal(seen.url, '/echo?x=1')
      assert.equal(seen.headers.authorization, 'Bearer abc')
      assert.equal(seen.headers['content-type'], 'application/json')
      assert.equal(seen.headers['x-lab'], 'yes')
      assert.deepEqual(JSON.parse(seen.body), { email: 'a@example.com' })
    })

    it('reads Retry-After in seconds or as a date, whatever the header name\'s case', async () => {
      const target = new HttpTarget(url, { connections: 1, timeoutMs: 5_000, client })
      const seconds = await target.send({ method: 'POST', path: '/refused' })
      const date = await target.send({ method: 'GET', path: '/refused-until' })
      await target.close()
      assert.equal(seconds.status, 503)
      assert.equal(seconds.ok, false)
      assert.equal(seconds.retryAfterSeconds, 3)
      assert.deepEqual(seconds.body, { error: { code: 'SERVICE_OVERLOADED', message: 'busy' } })
      assert.equal(date.status, 429)
      assert.ok(date.retryAfterSeconds !== null && date.retryAfterSeconds > 55 && date.retryAfterSeconds <= 60, String(date.retryAfterSeconds))
    })

    it('keeps a body that is not JSON only when asked', async () => {
      const target = new HttpTarget(url, { connections: 1, timeoutMs: 5_000, client })
      const kept = await target.send({ method: 'GET', path: '/text', readText: true })
      const dropped = await target.send({ method: 'GET', path: '/text' })
      await target.close()
      assert.equal(kept.text, 'metric_total 42\n')
      assert.equal(kept.body, undefined)
      assert.equal(dropped.text, undefined)
      assert.equal(dropped.ok, true)
    })

    it('posts a form, and keeps an answer\'s Location and each Set-Cookie; a 3xx is ok only for a step that asks', async () => {
      const target = new HttpTarget(url, { connections: 1, timeoutMs: 5_000, client })
      const walked = await target.send({ method: 'POST', path: '/form', form: { email: 'a+b@example.com', password: 'p w&d' }, headers: { cookie: 'seen=1' }, redirectIsOk: true })
      const sent = seen
      const unasked = await target.send({ method: 'POST', path: '/form', form: {} })
      const plain = await target.send({ method: 'GET', path: '/json' })
      await target.close()
      assert.equal(sent.headers['content-type'], 'application/x-www-form-urlencoded')
      assert.equal(sent.headers.cookie, 'seen=1')
      assert.deepEqual(Object.fromEntries(new URLSearchParams(sent.body)), { email: 'a+b@example.com', password: 'p w&d' })
      assert.equal(walked.status, 303)
      assert.equal(walked.ok, true)
      assert.equal(walked.location, '/next?step=2')
      assert.deepEqual(walked.setCookies, ['_session=abc; path=/; httponly', '_session.sig=xyz; path=/'])
      assert.equal(unasked.ok, false)
      assert.equal(plain.location, undefined, 'no Location, no field')
      assert.equal(plain.setCookies, undefined)
    })

    it('counts a JSON body that does not parse as a failed request, with the reason', async () => {
      const target = new HttpTarget(url, { connections: 1, timeoutMs: 5_000, client })
      const response = await target.send({ method: 'GET', path: '/broken-json' })
      await target.close()
      assert.equal(response.status, 200)
      assert.equal(response.ok, false)
      assert.equal(response.failure, null)
      assert.equal(response.detail, 'invalid JSON body')
    })

    it('counts a refused connection as a connection failure, a closed target too, without throwing', async () => {
      const closedPort = await new Promise<number>((resolve) => {
        const probe = http.createServer().listen(0, '127.0.0.1', () => {
          const { port } = probe.address() as AddressInfo
          probe.close(() => { resolve(port) })
        })
      })
      const target = new HttpTarget(`http://127.0.0.1:${closedPort}`, { connections: 1, timeoutMs: 5_000, client })
      const response = await target.send({ method: 'GET', path: '/' })
      await target.close()
      assert.equal(response.status, null)
      assert.equal(response.failure, 'connection', JSON.stringify(response))
      const afterClose = await target.send({ method: 'GET', path: '/' })
      assert.equal(afterClose.status, null)
      assert.equal(afterClose.failure, 'connection', JSON.stringify(afterClose))
    })
  })
}
