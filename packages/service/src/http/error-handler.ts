/**
 * Every error leaves as `{ "error": { "code", "message" } }` with a status from the registry in
 * errors.ts, Fastify's own errors and those it answers without us (a malformed request, a method
 * the route lacks, an undecodable URL) included.
 */
import http from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import pg from 'pg'
import { createError, errorRegistry, isTollboothError, TollboothError, type ErrorCode } from '../errors.js'
import { isDatabaseFault, toDatabaseFault } from '../db/index.js'
import { patternMessages } from './schemas.js'
import { connectionKeys, type RefusalPacer } from '../overload/index.js'

interface ValidationIssue {
  instancePath?: string
  keyword?: string
  message?: string
  params?: Record<string, unknown>
}

/** The field a validation error is about: `/email` -> email, missing `password` -> password. */
function fieldOf (issue: ValidationIssue): string | undefined {
  const extra = issue.params?.missingProperty ?? issue.params?.additionalProperty
  const pathParts = (issue.instancePath ?? '').split('/').filter((part) => part.length > 0)
  if (typeof extra === 'string') pathParts.push(extra)
  return pathParts.length > 0 ? pathParts.join('.') : undefined
}

function validationError (error: FastifyError): TollboothError {
  const issue = (error.validation?.[0] ?? {}) as ValidationIssue
  const field = fieldOf(issue)
  const context = error.validationContext ?? 'body'
  const at = `${context}${field === undefined ? '' : '.' + field}`
  const pattern = issue.params?.pattern
  let message: string
  if (issue.keyword === 'additionalProperties') message = `${context} has an unknown field "${field ?? '?'}"`
  else if (issue.keyword === 'required') message = `${context}.${field ?? '?'} is required`
  else if (issue.keyword === 'pattern' && typeof pattern === 'string' && patternMessages[pattern] !== undefined) message = `${at} ${patternMessages[pattern]}`
  else message = `${at} ${issue.message ?? 'is invalid'}`
  return createError('VALIDATION_FAILED', message, field === undefined ? {} : { field })
}

const fastifyCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'REQUEST_MALFORMED',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'BODY_INVALID_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'BODY_INVALID_JSON',
}

/** PostgreSQL refusing a character of the input (22021, 22P05): the schemas refuse these first; this backstop makes it a 400, not a 500. */
const unstorableCharacterCodes = new Set(['22021', '22P05'])

export function toTollboothError (error: FastifyError | Error): TollboothError {
  if (isTollboothError(error)) return error
  const fastifyError = error as FastifyError
  if (Array.isArray(fastifyError.validation)) return validationError(fastifyError)
  // The database out of reach (refused, reset, shutting down ...): 503 with Retry-After, not 500.
  const databaseFault = toDatabaseFault(error)
  if (databaseFault !== undefined) return databaseFault
  if (error instanceof pg.DatabaseError && unstorableCharacterCodes.has(error.code ?? '')) {
    return createError('VALIDATION_FAILED', 'A text field contains a character that cannot be stored (such as NUL)')
  }
  const mapped = fastifyError.code === undefined ? undefined : fastifyCodes[fastifyError.code]
  if (mapped !== undefined) return createError(mapped, mapped === 'BODY_INVALID_JSON' ? `The request body is not valid JSON: ${fastifyError.message}` : undefined)
  // JSON.parse failures from the body parser surface as SyntaxError with status 400.
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) return createError('BODY_INVALID_JSON')
  if (fastifyError.statusCode === 413) return createError('BODY_TOO_LARGE')
  if (fastifyError.statusCode === 415) return createError('UNSUPPORTED_MEDIA_TYPE')
  if (fastifyError.statusCode === 404) return createError('NOT_FOUND')
  if (fastifyError.statusCode === 405) return createError('METHOD_NOT_ALLOWED')
  // Validation errors were handled above: another 400 from Fastify is about the request itself (a bad URL ...).
  if (fastifyError.statusCode === 400) return createError('REQUEST_MALFORMED', fastifyError.message)
  return createError('INTERNAL', undefined, { cause: error })
}

function errorBody (error: TollboothError): { error: { code: string, message: string, field?: string } } {
  const body: { error: { code: string, message: string, field?: string } } = { error: { code: error.code, message: error.message } }
  if (error.field !== undefined) body.error.field = error.field
  return body
}

function sendError (reply: FastifyReply, error: TollboothError): FastifyReply {
  if (error.retryAfterSeconds !== undefined) void reply.header('retry-after', String(Math.max(1, Math.ceil(error.retryAfterSeconds))))
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(errorBody(error))
}

/** Fastify's `clientErrorHandler`: node's parser refused the request or it timed out; the answer is written on the socket, then closed. */
export function clientErrorHandler (this: FastifyInstance, err: NodeJS.ErrnoException, socket: Duplex): void {
  // A reset connection has no one to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  let error: TollboothError
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') error = createError('REQUEST_TIMEOUT')
  else if (err.code === 'HPE_HEADER_OVERFLOW') error = createError('HEADERS_TOO_LARGE')
  else error = createError('REQUEST_MALFORMED', `${errorRegistry.REQUEST_MALFORMED.message}${err.code === undefined ? '' : ` (${err.code})`}`)
  this.log.debug({ code: err.code }, 'client error')
  if (socket.writable) {
    const body = JSON.stringify(errorBody(error))
    socket.write(`HTTP/1.1 ${error.statusCode} ${http.STATUS_CODES[error.statusCode] ?? ''}\r\n` +
      `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
  }
  socket.destroy(err)
}

/** Fastify's `frameworkErrors`: errors raised before a route is found (an undecodable URL), which the error handler never sees. */
export function frameworkErrorHandler (error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  void sendError(reply, toTollboothError(error))
}

/** The methods that have a route at this path (a path, no query string), in Fastify's order. */
function allowedMethods (app: FastifyInstance, path: string): string[] {
  return app.supportedMethods.filter((method) => app.findRoute({ method, url: path }) !== null)
}

function unroutedError (app: FastifyInstance, method: string, url: string): { error: TollboothError, allow?: string } {
  const path = url.split('?')[0] ?? ''
  const allowed = path.startsWith('/') ? allowedMethods(app, path).filter((other) => other !== method) : []
  if (allowed.length === 0) return { error: createError('NOT_FOUND', `No route ${method} ${path}`) }
  const allow = allowed.join(', ')
  return { error: createError('METHOD_NOT_ALLOWED', `${path} does not accept ${method}; it accepts ${allow}`), allow }
}

/** A request no route matches: 405 with `Allow` when the path has routes for other methods (RFC 9110 15.5.6), else 404. */
function answerUnrouted (app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { error, allow } = unroutedError(app, request.method, request.url)
  if (allow !== undefined) void reply.header('allow', allow)
  return sendError(reply, error)
}

/** node's `connect` event: CONNECT never reaches Fastify, so it is answered 405/404 here and the connection closed. */
export function connectHandler (app: FastifyInstance, request: http.IncomingMessage, socket: Duplex): void {
  const { error, allow } = unroutedError(app, 'CONNECT', request.url ?? '')
  socket.on('error', () => {})
  const body = JSON.stringify(errorBody(error))
  socket.end(`HTTP/1.1 ${error.statusCode} ${http.STATUS_CODES[error.statusCode] ?? ''}\r\n` +
    (allow === undefined ? '' : `allow: ${allow}\r\n`) +
    `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
}

const overloadRefusals: ReadonlySet<ErrorCode> = new Set(['SERVICE_OVERLOADED', 'HASH_DEADLINE_EXCEEDED'])

/** `pacer`: every overload refusal with a `Retry-After` is noted (overload/pacing.ts), wherever it was decided, so coming back early is held. */
export function installErrorHandling (app: FastifyInstance, pacer?: RefusalPacer): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const tollboothError = toTollboothError(error)
    // Only overload refusals pace a client: a 429 of the login throttle is about one account,
    // and must not hold other requests from the same address (an office behind one NAT).
    if (pacer !== undefined && tollboothError.statusCode === 503 && tollboothError.retryAfterSeconds !== undefined) {
      pacer.noteRefusal(connectionKeys(pacer, request, reply), tollboothError.retryAfterSeconds)
    }
    if (tollboothError.code === 'INTERNAL') {
      request.log.error({ err: error }, 'unhandled error')
    } else if (isDatabaseFault(tollboothError)) {
      // The pool logs these at warn, at most a line a second: one per request would flood the log in an outage.
      request.log.debug({ code: tollboothError.code }, tollboothError.message)
    } else if (overloadRefusals.has(tollboothError.code)) {
      // The overload protection working: counted in /metrics, not logged (a line each would make refusing dearer).
      request.log.debug({ code: tollboothError.code }, tollboothError.message)
    } else if (tollboothError.statusCode >= 500) {
      request.log.warn({ code: tollboothError.code }, tollboothError.message)
    }
    // A client that went away gets no body; there is no one to read it.
    if (tollboothError.code === 'HASH_CANCELLED' && reply.raw.destroyed) return
    return sendError(reply, tollboothError)
  })
  // Decided in onRequest, before the body is read: Fastify would parse an unrouted request's body
  // first and answer 400 or 415 where the answer is 405. The first hook, so later ones skip it.
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return answerUnrouted(app, request, reply)
  })
  app.setNotFoundHandler((request, reply) => answerUnrouted(app, request, reply))
}
