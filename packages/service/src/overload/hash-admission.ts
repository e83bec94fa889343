/**
 * Hash admission at the door. A route that hashes is admitted once, in `onRequest`, before its
 * body is read and before any query, so a refusal (503 + Retry-After) costs a fraction of a served
 * request; admitted, it gets a ticket (`HashTicket`) that the rest of the request consumes.
 * Refusals are paced (pacing.ts).
 */
import { performance } from 'node:perf_hooks'
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { hashDeadlineAt, type HashRequest, type HashTaskKind, type HashTicket, type PasswordEngine } from '../hashing/index.js'
import type { ClientKeys, RefusalPacer } from './pacing.js'
import { whenBodyLate } from './late-body.js'
import { clientGoneSignal, requestReceivedAt, whenAnswerCloses } from './request-events.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The hash ticket admission gave this request at the door; null on a route that hashes nothing. */
    hashTicket: HashTicket | null
  }
}

export interface HashAdmissionOptions {
  engine: PasswordEngine
  pacer: RefusalPacer
  kind: HashTaskKind
  /** When the route's answer is due, from the request's arrival. */
  deadlineMs: number
}

/**
 * The keys a client is paced by: its connection (with its ages) and `keys` it may share, by
 * default its address. Through a trusted proxy it has no connection of its own: the proxy's
 * connections carry many clients.
 */
export function connectionKeys (pacer: RefusalPacer, request: FastifyRequest, reply: FastifyReply, keys: readonly string[] = [`ip:${request.ip}`]): ClientKeys {
  const socket = request.raw.socket
  if (request.ip !== socket.remoteAddress) return { keys }
  const ageMs = pacer.connections.ageMs(request.raw)
  return { connection: socket, connectionAgeMs: ageMs, arrivalAgeMs: Math.max(0, ageMs - reply.elapsedTime), keys }
}

/** Admits the request through the pacer. A hold takes at most half the deadline: a longer one could only end in a refusal. */
async function pacedTicket ({ engine, pacer, kind, deadlineMs }: HashAdmissionOptions, hashRequest: HashRequest, client: ClientKeys, request: FastifyRequest, reply: FastifyReply): Promise<HashTicket> {
  const arrivedAt = requestReceivedAt(reply)
  return await pacer.admit(
    client,
    () => engine.admit(kind, hashRequest),
    (refusal) => engine.refuse(kind, refusal),
    { maxHoldMs: arrivedAt + deadlineMs / 2 - performance.now(), holdSignal: () => hashRequest.signal ?? clientGoneSignal(reply) }
  )
}

/**
 * The place is held until the hash is submitted or the request ends. A body still coming a turn
 * after its headers gives it back (late-body.ts), so headers alone cannot hold places that refuse
 * every login; such a request is admitted again once its body is here (`admittedTicket`).
 */
function holdTicket (request: FastifyRequest, reply: FastifyReply, ticket: HashTicket): void {
  request.hashTicket = ticket
  whenAnswerCloses(reply.raw, request.raw.socket, () => { ticket.release() })
  whenBodyLate(request.raw, () => { ticket.release() })
}

/** The onRequest hook of a route that hashes: its ticket, or its refusal, before the body is read. */
export function hashAdmission (options: HashAdmissionOptions): onRequestAsyncHookHandler {
  return async (request, reply) => {
    holdTicket(request, reply, await pacedTicket(options, doorRequest(options, request, reply), connectionKeys(options.pacer, request, reply), request, reply))
  }
}

/**
 * The request's ticket, once its body is here: one that kept its place is used as it is. One that
 * gave its place back while its body came is admitted again, paced also by `sharedKeys` the body
 * tells (a login's account). A route without the hook (the lab's diagnostic login) is admitted here.
 */
export async function admittedTicket (options: HashAdmissionOptions, request: FastifyRequest, reply: FastifyReply, sharedKeys: readonly string[] = []): Promise<HashTicket> {
  const ticket = request.hashTicket
  if (ticket?.holdsPlace === true) return ticket
  const again = ticket === null ? doorRequest(options, request, reply) : ticketRequest(ticket)
  const admitted = await pacedTicket(options, again, connectionKeys(options.pacer, request, reply, [`ip:${request.ip}`, ...sharedKeys]), request, reply)
  holdTicket(request, reply, admitted)
  return admitted
}

/** A request as the door admits it: due by its route's deadline from its arrival, in its client's turn, dropped when it leaves. */
function doorRequest ({ deadlineMs }: HashAdmissionOptions, request: FastifyRequest, reply: FastifyReply): HashRequest {
  return { deadlineAt: hashDeadlineAt(requestReceivedAt(reply), deadlineMs), client: request.ip, signal: clientGoneSignal(reply) }
}

function ticketRequest (ticket: HashTicket): HashRequest {
  return {
    ...(ticket.deadlineAt === undefined ? {} : { deadlineAt: ticket.deadlineAt }),
    client: ticket.client,
    ...(ticket.signal === undefined ? {} : { signal: ticket.signal }),
  }
}
