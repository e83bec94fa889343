import { performance } from 'node:perf_hooks'
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { createError } from '../errors.js'
import { whenAnswerCloses } from './socket-close.js'
import type { AccessClaims, AccessTokens } from '../accounts/tokens.js'
import type { SessionCheck } from '../accounts/session-check.js'
import type { LoginContext } from '../accounts/auth-service.js'
import type { HashReservation } from '../hashing/index.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The hash queue's place held for this request since its admission (hash-admission.ts), or
     * null (not a hash route, or a strategy without admission).
     */
    hashReservation: HashReservation | null
    /** The signed-in user's id, set by `requireUser` before the body is even parsed. */
    userId: string
    /** The session (refresh family) of the request's access token, set with `userId`. */
    sessionId: string
  }
}

/**
 * Aborts when the client hangs up before the response is written, so a queued hash is dropped;
 * aborted already when it hung up before this was asked (a `close` that has passed never fires
 * again, and the hash would run for nobody). Its connection's `close` counts too: the response to
 * a pipelined request, queued behind the one ahead of it, never closes when the connection dies
 * (socket-close.ts).
 */
export function clientGoneSignal (reply: { raw: FastifyReply['raw'], request: { raw: Pick<FastifyRequest['raw'], 'socket'> } }): AbortSignal {
  const controller = new AbortController()
  const response = reply.raw
  const gone = (): void => {
    if (!response.writableFinished) controller.abort(createError('HASH_CANCELLED'))
  }
  if (response.destroyed) gone()
  else whenAnswerCloses(response, reply.request.raw.socket, gone)
  return controller.signal
}

/** When Fastify started on this request, in `performance.now()` time: deadlines count from here. */
export function requestReceivedAt (reply: FastifyReply): number {
  return performance.now() - reply.elapsedTime
}

/**
 * A route's deadline is when its answer is due; its hash must be done earlier, by what the
 * answer still takes after it (the session's INSERT, the token's signature, the response on the
 * socket, a hash run longer than the mean) and the client's side of the trip. With the hash due
 * at the deadline itself, a login storm's admitted logins read p99 1,993 to 2,012 ms at the client
 * against a 2,000 ms deadline (login-storm runs 17 to 29): a reserve of a fortieth of the deadline, at most 50 ms, is four
 * times the overshoot seen.
 */
export function answerReserveMs (deadlineMs: number): number {
  return Math.min(50, deadlineMs / 40)
}

/** How long after its request's arrival a hash must be done: the route's deadline less the answer's reserve. */
export function hashBudgetMs (deadlineMs: number): number {
  return deadlineMs - answerReserveMs(deadlineMs)
}

/** When the hash of a request received at `receivedAt` (performance.now() time) must be done. */
export function hashDeadlineAt (receivedAt: number, deadlineMs: number): number {
  return receivedAt + hashBudgetMs(deadlineMs)
}

/** What the auth service needs of a request: when it arrived, its client, and a signal for when that client leaves. */
export function requestContext (request: FastifyRequest, reply: FastifyReply): LoginContext {
  const context: LoginContext = { signal: clientGoneSignal(reply), receivedAt: requestReceivedAt(reply), client: request.ip, userAgent: userAgent(request) }
  const held = request.hashReservation ?? undefined
  if (held !== undefined) context.reservation = held
  return context
}

/** The User-Agent header as a session records it: at most 512 characters; undefined when absent. */
export function userAgent (request: FastifyRequest): string | undefined {
  const header = request.headers['user-agent']
  return header === undefined || header.length === 0 ? undefined : header.slice(0, 512)
}

/** The claims of a valid `Authorization: Bearer <jwt>`; throws AUTH_TOKEN_MISSING / AUTH_TOKEN_INVALID. */
export function authenticatedClaims (request: FastifyRequest, tokens: AccessTokens): AccessClaims | Promise<AccessClaims> {
  const header = request.headers.authorization
  if (header === undefined || header.length === 0) throw createError('AUTH_TOKEN_MISSING')
  // The scheme is case-insensitive (RFC 9110 section 11.1).
  const match = /^bearer +([A-Za-z0-9_.-]{1,4096})$/i.exec(header)
  if (match?.[1] === undefined) throw createError('AUTH_TOKEN_INVALID')
  return tokens.verify(match[1])
}

/**
 * An onRequest hook: authenticate before the body is parsed or validated, so an anonymous
 * caller learns nothing about the route's schema and costs no parsing. The token's session
 * must still be live (AUTH_SESSION_ENDED after logout, revocation or account deletion).
 */
export function requireUser (tokens: AccessTokens, sessions: SessionCheck): onRequestAsyncHookHandler {
  return async (request) => {
    const claims = await authenticatedClaims(request, tokens)
    await sessions.assertLive(claims.sessionId, claims.userId)
    request.userId = claims.userId
    request.sessionId = claims.sessionId
  }
}
