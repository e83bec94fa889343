import assert from 'node:assert/strict'
import { once } from 'node:events'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { clientGoneSignal } from '../../src/overload/request-events.js'

/** What `clientGoneSignal` reads of a Fastify reply: the response, and the request's socket. */
type Reply = Parameters<typeof clientGoneSignal>[0]

/** A server whose handler hands each request and response to `onRequest`; and one request to it, hung up after `hangUp` ms or never. */
async function exchange (onRequest: (reply: Reply) => Promise<void>, hangUp: boolean): Promise<void> {
  const server = http.createServer((request, response) => { void onRequest({ raw: response, request: { raw: request } }) })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  try {
    const request = http.request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
    request.on('error', () => {})
    const answered = new Promise<void>((resolve) => { request.on('response', (response) => { response.resume(); response.on('end', resolve) }) })
    request.end()
    if (hangUp) {
      await once(server, 'request')
      request.destroy()
    } else {
      await answered
    }
  } finally {
    server.closeAllConnections()
    server.close()
  }
}

describe('clientGoneSignal', () => {
  it('aborts when the client hangs up before the answer, and is aborted at once when it had hung up already', async () => {
    const signals: AbortSignal[] = []
    let done!: () => void
    const checked = new Promise<void>((resolve) => { done = resolve })
    await exchange(async (reply) => {
      signals.push(clientGoneSignal(reply))
      await once(reply.raw, 'close')
      // Asked after the hang-up: the 'close' has passed.
      signals.push(clientGoneSignal(reply))
      done()
    }, true)
    await checked
    assert.deepEqual(signals.map((signal) => signal.aborted), [true, true])
    assert.equal((signals[1]?.reason as { code?: string }).code, 'HASH_CANCELLED')
  })

  it('aborts for a pipelined request, queued behind the one ahead of it, when the connection dies', async () => {
    // Its response waits in Node's queue without a socket and never closes: the connection's close tells.
    const replies: Reply[] = []
    const server = http.createServer((request, response) => { replies.push({ raw: response, request: { raw: request } }) })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1')
      socket.on('error', () => {})
      await once(socket, 'connect')
      socket.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n')
      while (replies.length < 2) await new Promise((resolve) => { setImmediate(resolve) })
      const signals = replies.map((reply) => clientGoneSignal(reply))
      assert.deepEqual(signals.map((signal) => signal.aborted), [false, false])
      const serverSide = replies[1]?.request.raw.socket
      assert.ok(serverSide !== undefined)
      const closed = new Promise((resolve) => { serverSide.once('close', resolve) })
      socket.resetAndDestroy()
      await closed
      await new Promise((resolve) => { setImmediate(resolve) })
      assert.deepEqual(signals.map((signal) => signal.aborted), [true, true])
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

  it('never aborts for an answer that was written', async () => {
    let signal: AbortSignal | undefined
    await exchange(async (reply) => {
      signal = clientGoneSignal(reply)
      reply.raw.end('ok')
      await once(reply.raw, 'close')
    }, false)
    await new Promise((resolve) => { setImmediate(resolve) })
    assert.equal(signal?.aborted, false)
  })
})
