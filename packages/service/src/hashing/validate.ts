/**
 * Shape checks with TypeBox's compiled validators, and their first error in words that name
 * the field (`policy.argon2.memoryKiB must be an integer, got "lots"`). The bounds with a
 * reason (limits.ts) are checked after the shape, by hand, because their reasons and their
 * dependent bounds (memory per lane, N·r) are what the messages are for.
 */
import { Kind, TypeRegistry, type TSchema } from '@sinclair/typebox'
import type { TypeCheck } from '@sinclair/typebox/compiler'
import { AdmissionTicket } from './ticket.js'

export interface Fault {
  /** Dotted path from the root: `policy.argon2.memoryKiB`, `options.deadlineMs`. */
  field: string
  /** What the field must be and what it was: `must be an integer from 1 to 256, got 0`. */
  message: string
}

TypeRegistry.Set('AbortSignal', (_schema, value) => value instanceof AbortSignal)
TypeRegistry.Set('HashTicket', (_schema, value) => value instanceof AdmissionTicket)

/** A ticket from `PasswordEngine.admit`, checked with instanceof. */
export function admissionTicketSchema (): TSchema {
  return { [Kind]: 'HashTicket' } as TSchema
}

/** An AbortSignal, checked with instanceof (TypeBox has no such type of its own). */
export function abortSignalSchema (): TSchema {
  return { [Kind]: 'AbortSignal' } as TSchema
}

function range (schema: TSchema): string {
  const { minimum, maximum } = schema as { minimum?: number, maximum?: number }
  if (minimum !== undefined && maximum !== undefined) return ` from ${minimum} to ${maximum}`
  if (minimum !== undefined) return ` >= ${minimum}`
  return ''
}

/** What a schema asks for, in words. */
function expectation (schema: TSchema): string {
  const anyOf = (schema as { anyOf?: Array<{ const?: unknown }> }).anyOf
  if (anyOf?.every((member) => member.const !== undefined) === true) return `must be one of ${anyOf.map((member) => String(member.const)).join(', ')}`
  if (schema[Kind] === 'AbortSignal') return 'must be an AbortSignal'
  if (schema[Kind] === 'HashTicket') return 'must be a ticket from PasswordEngine.admit'
  switch ((schema as { type?: string }).type) {
    case 'object': return 'must be an object'
    case 'string': return (schema as { minLength?: number }).minLength === undefined ? 'must be a string' : 'must be a non-empty string'
    case 'integer': return `must be an integer${range(schema)}`
    case 'number': return `must be a finite number${range(schema)}`
    default: return 'is not valid'
  }
}

function shown (value: unknown): string {
  if (typeof value === 'number') return String(value)
  if (typeof value === 'string') return JSON.stringify(value)
  return value === null ? 'null' : typeof value
}

/** Undefined when `value` fits `check`; else its first error, the field named from `root`. */
export function firstFault (check: TypeCheck<TSchema>, value: unknown, root: string): Fault | undefined {
  if (check.Check(value)) return undefined
  const error = check.Errors(value).First()
  if (error === undefined) return { field: root, message: 'is not valid' }
  const field = [root, ...error.path.split('/').filter((part) => part !== '')].filter((part) => part !== '').join('.')
  const description = typeof error.schema.description === 'string' ? ` (${error.schema.description})` : ''
  return { field, message: `${expectation(error.schema)}${description}, got ${shown(error.value)}` }
}
