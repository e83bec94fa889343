/**
 * Hash admission at the door: a login or registration the hash queue cannot serve before
 * its deadline is refused in `onRequest`, before its body is read, parsed or validated and
 * before any query, so a refusal costs a fraction of a served request. Refusals are paced
 * (pacing.ts): a client that is back before its `Retry-After` is held, not answered at once.
 */
import { performance } from 'node:perf_hooks'
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import type { HashRequestOptions, HashReservation, HashTaskKind, PasswordEngine } from '../hashing/index.js'
import type { ClientKeys, RefusalPacer } from './pacing.js'
import { connectionAgeMs } from './connection-age.js'
import { clientGoneSignal, hashDeadlineAt, requestReceivedAt } from '../http/request-context.js'
import { whenBodyLate } from './late-body.js'
import { whenAnswerCloses } from '../http/socket-close.js'

export interface HashAdmissionOptions {
  engine: PasswordEngine
  pacer: RefusalPacer
  kind: HashTaskKind
  deadlineMs: number
}

/**
 * The keys a client is paced by: its connection (with its age now and when the request arrived),
 * and `keys` it may share with others (pacing.ts), by default its address, the only one known
 * before its body is read. A request that came through a trusted proxy (its address read from
 * X-Forwarded-For) is not on a connection of its own: the proxy's connections carry many clients.
 */
export function connectionKeys (request: FastifyRequest, reply: FastifyReply, keys: readonly string[] = [`ip:${request.ip}`]): ClientKeys {
  const socket = request.raw.socket
  if (request.ip !== socket.remoteAddress) return { keys }
  const ageMs = connectionAgeMs(request.raw)
  return { connection: socket, connectionAgeMs: ageMs, arrivalAgeMs: Math.max(0, ageMs - reply.elapsedTime), keys }
}

/**
 * The hash options of this request: its deadline counts from arrival, its address is its place
 * in the turn order, and its reservation, once admitted, is its own (left out of its checks).
 */
export function hashRequestOptions (request: FastifyRequest, reply: FastifyReply, deadlineMs: number): HashRequestOptions & { deadlineAt: number } {
  const options = { deadlineAt: hashDeadlineAt(requestReceivedAt(reply), deadlineMs), client: request.ip }
  const held = request.hashReservation ?? undefined
  return held === undefined ? options : { ...options, reservation: held }
}

/**
 * Holds the request's place from its admission until its hash is submitted (the pool releases
 * it then) or its request ends, answered or abandoned (its connection's close included:
 * socket-close.ts), whichever comes first.
 */
function holdPlace (request: FastifyRequest, reply: FastifyReply, reservation: HashReservation | undefined): void {
  if (reservation === undefined) return
  request.hashReservation = reservation
  whenAnswerCloses(reply.raw, request.raw.socket, () => { reservation.release() })
  // A body that has not all come a turn after its headers gives the place back (late-body.ts): a
  // client that sends headers and then nothing must not hold places that refuse every login.
  whenBodyLate(request.raw, () => { reservation.release() })
}

/**
 * Admits (returns) or refuses (throws, counted) a hash request with these options, holding it
 * first if this client is back before its Retry-After. The hold never takes more than half the
 * deadline: a held request keeps time to be admitted and finish its hash when checked again
 * (a longer hold would only ever end in a refusal, and a client held again for as long would
 * never get in).
 */
export async function pacedHashAdmission (
  { engine, pacer, kind, deadlineMs }: HashAdmissionOptions,
  client: ClientKeys,
  request: FastifyRequest,
  reply: FastifyReply
): Promise<void> {
  const options = hashRequestOptions(request, reply, deadlineMs)
  await pacer.admit(
    client,
    () => engine.admission(kind, options),
    () => { engine.assertAdmissible(kind, options) },
    // Half the route's deadline from arrival (the hash's own deadline is a reserve earlier than the route's).
    { maxHoldMs: requestReceivedAt(reply) + deadlineMs / 2 - performance.now(), holdSignal: () => clientGoneSignal(reply) }
  )
  // Admitted: a place from now until its hash is submitted. Admitted once (the hook, before the
  // body) and checked again (the route, on the account's key), a request holds one place.
  // One given back because its body came late (`holdPlace`) is taken again now the body is here.
  if (request.hashReservation === null || request.hashReservation.released) holdPlace(request, reply, engine.reserve(kind, options))
}

/** The onRequest hook: paced hash admission by connection and address, before the body is read. */
export function hashAdmission (admission: HashAdmissionOptions): onRequestAsyncHookHandler {
  return async (request, reply) => {
    await pacedHashAdmission(admission, connectionKeys(request, reply), request, reply)
  }
}
