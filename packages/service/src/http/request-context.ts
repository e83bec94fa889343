/**
 * What the account rules need of an HTTP request, and the Bearer authentication every signed-in
 * route runs before its body is parsed.
 */
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { createError } from '../errors.js'
import type { AccessClaims, AccessTokens, HashedRequest, SessionCheck } from '../accounts/index.js'
import { admittedTicket, requestReceivedAt, type HashAdmissionOptions } from '../overload/index.js'
import { noStoreHeaders } from './security-headers.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in user's id, set by `requireUser` before the body is even parsed. */
    userId: string
    /** The session (refresh family) of the request's access token, set with `userId`. */
    sessionId: string
  }
}

/**
 * A hashing route's request for the account rules, once its body is here: the ticket admission
 * gave it (overload/hash-admission.ts `admittedTicket`), its arrival, its User-Agent.
 */
export async function admittedRequest (admission: HashAdmissionOptions, request: FastifyRequest, reply: FastifyReply, sharedKeys: readonly string[] = []): Promise<HashedRequest> {
  const ticket = await admittedTicket(admission, request, reply, sharedKeys)
  return { ticket, receivedAt: requestReceivedAt(reply), userAgent: userAgent(request) }
}

/** The User-Agent header as a session records it: at most 512 characters; undefined when absent. */
export function userAgent (request: FastifyRequest): string | undefined {
  const header = request.headers['user-agent']
  return header === undefined || header.length === 0 ? undefined : header.slice(0, 512)
}

/** The claims of a valid `Authorization: Bearer <jwt>`; throws AUTH_TOKEN_MISSING / AUTH_TOKEN_INVALID. */
function authenticatedClaims (request: FastifyRequest, tokens: AccessTokens): AccessClaims | Promise<AccessClaims> {
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
 * must still be live (AUTH_SESSION_ENDED after logout, revocation or account deletion). Every
 * answer of a signed-in route, its refusals included, is no-store: no cache keeps an account's data.
 */
export function requireUser (tokens: AccessTokens, sessions: SessionCheck): onRequestAsyncHookHandler {
  return async (request, reply) => {
    reply.headers(noStoreHeaders)
    const claims = await authenticatedClaims(request, tokens)
    await sessions.assertLive(claims.sessionId, claims.userId)
    request.userId = claims.userId
    request.sessionId = claims.sessionId
  }
}
