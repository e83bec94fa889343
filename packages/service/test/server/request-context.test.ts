import assert from 'node:assert/strict'
import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { clientGoneSignal } from '../../src/server/request-context.js'

/** A server whose handler hands each response to `onRequest`; and one request to it, hung up after `hangUp` ms or never. */
async function exchange (onRequest: (response: http.ServerResponse) => Promise<void>, hangUp: boolean): Promise<void> {
  const server = http.createServer((_request, response) => { void onRequest(response) })
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
    await exchange(async (response) => {
      signals.push(clientGoneSignal({ raw: response } as never))
      await once(response, 'close')
      // Asked after the hang-up: the 'close' has passed.
      signals.push(clientGoneSignal({ raw: response } as never))
      done()
    }, true)
    await checked
    assert.deepEqual(signals.map((signal) => signal.aborted), [true, true])
    assert.equal((signals[1]?.reason as { code?: string }).code, 'HASH_CANCELLED')
  })

  it('never aborts for an answer that was written', async () => {
    let signal: AbortSignal | undefined
    await exchange(async (response) => {
      signal = clientGoneSignal({ raw: response } as never)
      response.end('ok')
      await once(response, 'close')
    }, false)
    await new Promise((resolve) => { setImmediate(resolve) })
    assert.equal(signal?.aborted, false)
  })
})
