/**
 * Line parsing: one line of the import file, `{"email", "name"?, "emailVerified"?, "passwordHash"?,
 * "passwordSalt"?}`, checked as registration checks the same fields (the address trimmed, then
 * the API schema's email format and length, then lower-cased; the name as the API's) and its
 * hash recognised (source-hash.ts). Unknown fields are refused: a misspelt `passwordHash` must
 * not make an account without a password.
 */
import { fullFormats } from 'ajv-formats/dist/formats.js'
import type { FirebaseHashParams, StoredMemoryBound } from '../../hashing/index.js'
import type { ImportedUser } from '../../db/index.js'
import { normaliseEmail } from '../email.js'
import { LineRejected } from './rejection.js'
import { storedFormOf, type SourceHashFormat } from './source-hash.js'

/** The API's email format (http/schemas.ts: `format: 'email'`, which Fastify checks with ajv-formats' full format). */
const emailFormat = fullFormats.email as RegExp
const emailMinLength = 3
const emailMaxLength = 254
const nameMaxLength = 100
/** http/schemas.ts visibleTextPattern, `^(?!\s*$)[^\u0000]*$`: a non-space character (trim strips what \s matches) and no NUL. */
function visibleText (text: string): boolean {
  return text.trim() !== '' && !text.includes('\u0000')
}

const fields = new Set(['email', 'name', 'emailVerified', 'passwordHash', 'passwordSalt'])

/** What every line is read with: the Firebase project's parameters, the hash pool's memory share. */
export interface LineContext {
  firebase: FirebaseHashParams | undefined
  memoryBound: StoredMemoryBound | undefined
}

export interface ParsedLine {
  user: ImportedUser
  format: SourceHashFormat
}

/** JSON Schema's string length: code points, as PostgreSQL's length() counts them too. */
function codePoints (text: string): number {
  return Array.from(text).length
}

/** Registration's normalisation: trimmed, the API's email format and length, lower-cased. */
function registrableEmail (value: unknown): string {
  if (typeof value !== 'string') throw new LineRejected('invalid_email', 'email must be a string')
  const trimmed = value.trim()
  const length = codePoints(trimmed)
  if (length < emailMinLength || length > emailMaxLength) throw new LineRejected('invalid_email', `email must be ${emailMinLength} to ${emailMaxLength} characters`)
  if (!emailFormat.test(trimmed)) throw new LineRejected('invalid_email', 'email is not an address registration accepts')
  return normaliseEmail(trimmed)
}

function nameOf (value: unknown): string | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'string' || codePoints(value) < 1 || codePoints(value) > nameMaxLength || !visibleText(value)) {
    throw new LineRejected('invalid_name', `name must be 1 to ${nameMaxLength} characters, with a non-space character and no NUL`)
  }
  return value
}

function optionalString (value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw new LineRejected('invalid_field', `${field} must be a string`)
  return value
}

/** A line's account, or `LineRejected` saying why not. */
export function parseImportLine (line: string, context: LineContext): ParsedLine {
  let record: unknown
  try {
    record = JSON.parse(line)
  } catch (err) {
    throw new LineRejected('malformed_json', (err as Error).message.slice(0, 200))
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) throw new LineRejected('malformed_json', 'a line is one JSON object')
  const object = record as Record<string, unknown>
  for (const key of Object.keys(object)) {
    if (!fields.has(key)) throw new LineRejected('invalid_field', `unexpected field '${key.slice(0, 40)}' (known: ${[...fields].join(', ')})`)
  }
  const email = registrableEmail(object.email)
  const name = nameOf(object.name)
  const verified = object.emailVerified ?? false
  if (typeof verified !== 'boolean') throw new LineRejected('invalid_field', 'emailVerified must be true or false')
  const stored = storedFormOf(optionalString(object.passwordHash, 'passwordHash'), optionalString(object.passwordSalt, 'passwordSalt'), context.firebase, context.memoryBound)
  return { user: { email, name, passwordHash: stored.passwordHash, emailVerified: verified }, format: stored.format }
}
