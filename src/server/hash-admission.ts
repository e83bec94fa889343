/**
 * Hash admission at the door: a login or registration the hash queue cannot serve before
 * its deadline is refused in `onRequest`, before its body is read, parsed or validated and
 * before any query, so a refusal costs a fraction of a served request. Refusals are paced
 * (pacing.ts): a client that is back before its `Retry-After` is held, not answered at once.
 */
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import type { HashRequestOptions, HashTaskKind, PasswordEngine } from '../hashing/types.js'
import type { ClientKeys, RefusalPacer } from './pacing.js'
import { clientGoneSignal, requestReceivedAt } from './request-context.js'

export interface HashAdmissionOptions {
  engine: PasswordEngine
  pacer: RefusalPacer
  kind: HashTaskKind
  deadlineMs: number
}

/** The keys a client is paced by before its body is read: its connection and its address. */
export function connectionKeys (request: FastifyRequest): ClientKeys {
  return { connection: request.raw.socket, keys: [`ip:${request.ip}`] }
}

/** The hash options of this request: its deadline counts from arrival, its address is its place in the turn order. */
export function hashRequestOptions (request: FastifyRequest, reply: FastifyReply, deadlineMs: number): HashRequestOptions {
  return { deadlineAt: requestReceivedAt(reply) + deadlineMs, client: request.ip }
}

export function hashAdmission ({ engine, pacer, kind, deadlineMs }: HashAdmissionOptions): onRequestAsyncHookHandler {
  return async (request, reply) => {
    const options = hashRequestOptions(request, reply, deadlineMs)
    await pacer.admit(
      connectionKeys(request),
      () => engine.admission(kind, options),
      () => { engine.assertAdmissible(kind, options) },
      () => clientGoneSignal(reply)
    )
  }
}
