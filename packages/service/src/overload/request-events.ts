/**
 * What happens to a request after it arrived: when it arrived, when its answer or its connection
 * closes, and a signal for its client leaving.
 *
 * Closing is followed on the socket too, not only the response: a response to a pipelined
 * request waits in Node's queue without a socket, and if the connection dies there it never emits
 * `close`, so what was counted for it (the in-flight cap's place, a queued hash) would be kept
 * forever. One `close` listener per socket serves every callback: a listener apiece for pipelined
 * requests would pile up (Node warns past ten).
 */
import type http from 'node:http'
import type net from 'node:net'
import { performance } from 'node:perf_hooks'
import { createError } from '../errors.js'

const callbacksBySocket = new WeakMap<net.Socket, Set<() => void>>()

const noop = (): void => {}

/**
 * Calls `callback` once when `socket` closes, or at once when it is destroyed already. Returns
 * the function that cancels it (to call when what it guards ended first: a keep-alive socket
 * would otherwise keep a callback per request it served).
 */
function whenSocketCloses (socket: net.Socket, callback: () => void): () => void {
  if (socket.destroyed) {
    callback()
    return noop
  }
  let callbacks = callbacksBySocket.get(socket)
  if (callbacks === undefined) {
    const created = new Set<() => void>()
    callbacks = created
    callbacksBySocket.set(socket, created)
    socket.once('close', () => {
      callbacksBySocket.delete(socket)
      for (const call of created) call()
      created.clear()
    })
  }
  const registered = callbacks
  registered.add(callback)
  return () => { registered.delete(callback) }
}

/**
 * Calls `callback` once, when `response` closes or its connection does, whichever comes first:
 * what a request holds (a place under the cap, a hash's cancellation, a place in the hash queue)
 * is given back even when its response is a pipelined one that never closes. The connection's
 * callback is dropped once the response closes.
 */
export function whenAnswerCloses (response: http.ServerResponse, socket: net.Socket, callback: () => void): void {
  let called = false
  let forgetSocket = noop
  const once = (): void => {
    if (called) return
    called = true
    forgetSocket()
    response.off('close', once)
    callback()
  }
  response.once('close', once)
  forgetSocket = whenSocketCloses(socket, once)
}

/** When Fastify started on this request, in `performance.now()` time: deadlines count from here. */
export function requestReceivedAt (reply: { elapsedTime: number }): number {
  return performance.now() - reply.elapsedTime
}

/**
 * Aborts (with HASH_CANCELLED) when the client hangs up before the response is written, so a
 * queued hash is dropped; aborted already when it hung up before this was asked (a `close` that
 * has passed never fires again, and the hash would run for nobody). Its connection's `close`
 * counts too: the response to a pipelined request, queued behind the one ahead of it, never
 * closes when the connection dies.
 */
export function clientGoneSignal (reply: { raw: http.ServerResponse, request: { raw: { socket: net.Socket } } }): AbortSignal {
  const controller = new AbortController()
  const response = reply.raw
  const gone = (): void => {
    if (!response.writableFinished) controller.abort(createError('HASH_CANCELLED'))
  }
  if (response.destroyed) gone()
  else whenAnswerCloses(response, reply.request.raw.socket, gone)
  return controller.signal
}
