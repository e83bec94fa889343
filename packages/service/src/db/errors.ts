/**
 * Which failures mean "the database cannot be reached", as opposed to a statement PostgreSQL
 * refused: the one place that knows the shapes pg and node give them. Such a failure is a 503
 * DATABASE_UNAVAILABLE with a Retry-After, never a 500.
 */
import { createError, type TollboothError } from '../errors.js'

/** Seconds a client should wait after DATABASE_UNAVAILABLE: long enough for a restart or failover to begin answering. */
const databaseUnavailableRetryAfterSeconds = 2

/** Seconds after SERVICE_OVERLOADED from a saturated pool: queries last milliseconds, so a slot frees up soon. */
const poolSaturatedRetryAfterSeconds = 1

/** Socket errors of node's net module: refused, reset, timed out, broken pipe, no route, no such host. */
const connectionErrnoCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND'])

/** SQLSTATEs outside class 08 that still mean no usable connection: shutdowns, cannot_connect_now, too_many_connections. */
const connectionSqlStates = new Set(['57P01', '57P02', '57P03', '53300'])

/** pg's and pg-pool's messages for a connection that died or never came, which carry no errno (pool.ts tells saturation apart first). */
const connectionMessages = new Set([
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
])

function isSqlState (code: string): boolean {
  return /^[0-9A-Z]{5}$/.test(code)
}

/** True when `err`, or what it wraps (`cause`, an AggregateError's `errors`), is a connection-level failure. */
export function isConnectionFailure (err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 4) return false
  const { code, message, cause, errors } = err as { code?: unknown, message?: unknown, cause?: unknown, errors?: unknown }
  if (typeof code === 'string') {
    if (connectionErrnoCodes.has(code)) return true
    if (isSqlState(code) && (code.startsWith('08') || connectionSqlStates.has(code))) return true
  }
  if (typeof message === 'string' && connectionMessages.has(message)) return true
  if (Array.isArray(errors) && errors.some((inner) => isConnectionFailure(inner, depth + 1))) return true
  return isConnectionFailure(cause, depth + 1)
}

/** A statement PostgreSQL refused because a foreign key found no row (SQLSTATE 23503 foreign_key_violation). */
export function isForeignKeyViolation (err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23503'
}

/** The errors below came from the database layer: the pool logs them (throttled), so requests need not. */
const databaseFaults = new WeakSet<TollboothError>()

export function isDatabaseFault (err: unknown): boolean {
  return typeof err === 'object' && err !== null && databaseFaults.has(err as TollboothError)
}

/** DATABASE_UNAVAILABLE (503) with Retry-After; the driver's text stays in `cause`, out of the answer. */
export function databaseUnavailable (cause: unknown): TollboothError {
  const error = createError('DATABASE_UNAVAILABLE', undefined, { retryAfterSeconds: databaseUnavailableRetryAfterSeconds, cause })
  databaseFaults.add(error)
  return error
}

/** SERVICE_OVERLOADED (503): every pooled connection stayed busy for the whole acquire deadline. */
export function poolSaturated (cause: unknown): TollboothError {
  const error = createError('SERVICE_OVERLOADED', undefined, { retryAfterSeconds: poolSaturatedRetryAfterSeconds, cause })
  databaseFaults.add(error)
  return error
}

/** The answer for a connection-level failure, or undefined for any other error. */
export function toDatabaseFault (err: unknown): TollboothError | undefined {
  return isConnectionFailure(err) ? databaseUnavailable(err) : undefined
}
