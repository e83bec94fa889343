/**
 * HttpTarget (the lab's HTTP client): a server that does not answer, or stops in the middle of
 * a body, is counted as a timeout after the request timeout, not waited for.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { HttpTarget } from '../src/http.js'

describe('HttpTarget timeouts', () => {
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
      const target = new HttpTarget(url, { connections: 1, timeoutMs: 300 })
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
