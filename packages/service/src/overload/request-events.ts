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

/** Calls `callback` once when `socket` closes (at once if destroyed); returns a cancel, so a keep-alive socket keeps no stale callbacks. */
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

/** Calls `callback` once, when `response` or its connection closes, so what a request holds is given back even if pipelined. */
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
 * Aborts (HASH_CANCELLED) when the client hangs up before the response is written, so a queued
 * hash is dropped; aborted already if it hung up before this was asked (a past `close` never fires again).
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
