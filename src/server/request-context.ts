import type { FastifyReply, FastifyRequest } from 'fastify'
import { createError } from '../errors.js'
import type { AccessTokens } from './tokens.js'

/** Aborts when the client hangs up before the response is written, so a queued hash is dropped. */
export function clientGoneSignal (reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort(createError('HASH_CANCELLED'))
  })
  return controller.signal
}

/** The user id of a valid `Authorization: Bearer <jwt>`; throws AUTH_TOKEN_MISSING / AUTH_TOKEN_INVALID. */
export function authenticatedUserId (request: FastifyRequest, tokens: AccessTokens): string {
  const header = request.headers.authorization
  if (header === undefined || header.length === 0) throw createError('AUTH_TOKEN_MISSING')
  const match = /^Bearer ([A-Za-z0-9_.-]{1,4096})$/.exec(header)
  if (match?.[1] === undefined) throw createError('AUTH_TOKEN_INVALID')
  return tokens.verify(match[1])
}
