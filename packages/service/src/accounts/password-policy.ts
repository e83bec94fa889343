/**
 * What a password must be: the cheap checks before the expensive hash. A new password (register,
 * reset, change) goes through `acceptNewPassword`; a typed one that is checked against a stored
 * hash (login, re-authentication) through `passwordForms`. Both work on text, never on a hash.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createError } from '../errors.js'
import { packageRoot } from '../paths.js'

// Node 20 has String.prototype.isWellFormed (V8 11.x); TypeScript declares it from ES2024's lib,
// which the workspace's ES2023 lib does not include.
declare global {
  interface String {
    isWellFormed (): boolean
  }
}

/** The bundled list: where it is, and how it is read (its header, then one password a line). */
export const commonPasswordsFile = path.join(packageRoot, 'src', 'accounts', 'common-passwords.txt')

/** Parses the list's text: the header ends at the first empty line; entries are lower-cased NFC. */
export function parseCommonPasswords (text: string): Set<string> {
  const lines = text.split(/\r?\n/)
  const headerEnd = lines.indexOf('')
  const entries = new Set<string>()
  for (const line of lines.slice(headerEnd + 1)) {
    if (line !== '') entries.add(comparable(line))
  }
  return entries
}

// Read once, when the module loads (start-up): no request ever reads a file.
const commonPasswords: ReadonlySet<string> = parseCommonPasswords(fs.readFileSync(commonPasswordsFile, 'utf8'))

/** How the list compares: case-insensitively, after NFC. */
function comparable (password: string): string {
  return password.normalize('NFC').toLowerCase()
}

/** True when the password (any case, any normalisation form) is on the common-password list. */
export function isCommonPassword (password: string): boolean {
  return commonPasswords.has(comparable(password))
}

/** How many passwords the bundled list holds (for the docs and tests). */
export function commonPasswordCount (): number {
  return commonPasswords.size
}

// Nothing a person can see: white space, and control and format characters (zero-width space, BOM).
const blankPattern = /^[\p{White_Space}\p{Cc}\p{Cf}]*$/u

/** A new password's length once normalised, in code points, as JSON Schema counts (the API's schema says the same). */
export const passwordMinLength = 8
export const passwordMaxLength = 1024

function codePoints (text: string): number {
  // UTF-16 units less the second half of each surrogate pair (the text is well-formed here).
  let count = text.length
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0xdc00 && unit <= 0xdfff) count--
  }
  return count
}

/** Lone surrogates would reach the hash as U+FFFD, so two different passwords would hash alike: refused before any hash. */
function assertWellFormed (password: string, field: string): void {
  if (!password.isWellFormed()) throw createError('PASSWORD_MALFORMED', undefined, { field })
}

/**
 * Checks a new password and returns the form to hash, its NFC, so "café" composed or decomposed
 * is one password. Throws a coded 400: malformed, blank, outside the length once normalised, or
 * common. bcrypt's 72 bytes stay the engine's bound. `field` names the body's field.
 */
export function acceptNewPassword (password: string, field = 'password'): string {
  assertWellFormed(password, field)
  const normalised = password.normalize('NFC')
  if (blankPattern.test(normalised)) throw createError('PASSWORD_BLANK', undefined, { field })
  const length = codePoints(normalised)
  if (length < passwordMinLength || length > passwordMaxLength) {
    throw createError('VALIDATION_FAILED', `${field} must have ${passwordMinLength} to ${passwordMaxLength} characters once normalised (NFC)`, { field })
  }
  if (commonPasswords.has(normalised.toLowerCase())) throw createError('PASSWORD_TOO_COMMON', undefined, { field })
  return normalised
}

/**
 * The forms of a typed password to verify, in order: its NFC form, then the text as typed when it
 * differs (hashes made from un-normalised text). ASCII is one form. Throws PASSWORD_MALFORMED.
 */
export function passwordForms (password: string, field = 'password'): [nfc: string] | [nfc: string, raw: string] {
  assertWellFormed(password, field)
  const normalised = password.normalize('NFC')
  return normalised === password ? [normalised] : [normalised, password]
}
