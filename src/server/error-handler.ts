/**
 * Every error leaves as `{ "error": { "code", "message" } }` with a status from
 * the registry in src/errors.ts; Fastify's own errors are mapped onto it.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { createError, isTollboothError, TollboothError, type ErrorCode } from '../errors.js'

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
  let message: string
  if (issue.keyword === 'additionalProperties') message = `${context} has an unknown field "${field ?? '?'}"`
  else if (issue.keyword === 'required') message = `${context}.${field ?? '?'} is required`
  else message = `${context}${field === undefined ? '' : '.' + field} ${issue.message ?? 'is invalid'}`
  return createError('VALIDATION_FAILED', message, field === undefined ? {} : { field })
}

const fastifyCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'VALIDATION_FAILED',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'BODY_INVALID_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'BODY_INVALID_JSON',
}

export function toTollboothError (error: FastifyError | Error): TollboothError {
  if (isTollboothError(error)) return error
  const fastifyError = error as FastifyError
  if (Array.isArray(fastifyError.validation)) return validationError(fastifyError)
  const mapped = fastifyError.code === undefined ? undefined : fastifyCodes[fastifyError.code]
  if (mapped !== undefined) return createError(mapped, mapped === 'BODY_INVALID_JSON' ? `The request body is not valid JSON: ${fastifyError.message}` : undefined)
  // JSON.parse failures from the body parser surface as SyntaxError with status 400.
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) return createError('BODY_INVALID_JSON')
  if (fastifyError.statusCode === 413) return createError('BODY_TOO_LARGE')
  if (fastifyError.statusCode === 415) return createError('UNSUPPORTED_MEDIA_TYPE')
  if (fastifyError.statusCode === 404) return createError('NOT_FOUND')
  if (fastifyError.statusCode === 405) return createError('METHOD_NOT_ALLOWED')
  if (fastifyError.statusCode === 400) return createError('VALIDATION_FAILED', fastifyError.message)
  return createError('INTERNAL', undefined, { cause: error })
}

export function sendError (reply: FastifyReply, error: TollboothError): FastifyReply {
  if (error.retryAfterSeconds !== undefined) void reply.header('retry-after', String(Math.max(1, Math.ceil(error.retryAfterSeconds))))
  const body: { error: { code: string, message: string, field?: string } } = { error: { code: error.code, message: error.message } }
  if (error.field !== undefined) body.error.field = error.field
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(body)
}

export function installErrorHandling (app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const tollboothError = toTollboothError(error)
    if (tollboothError.code === 'INTERNAL') {
      request.log.error({ err: error }, 'unhandled error')
    } else if (tollboothError.statusCode >= 500) {
      request.log.warn({ code: tollboothError.code }, tollboothError.message)
    }
    // A client that went away gets no body; there is no one to read it.
    if (tollboothError.code === 'HASH_CANCELLED' && reply.raw.destroyed) return
    return sendError(reply, tollboothError)
  })
  app.setNotFoundHandler((request, reply) => sendError(reply, createError('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0] ?? ''}`)))
}
