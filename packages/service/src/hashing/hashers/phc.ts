/**
 * Parsing and formatting of stored hashes: the PHC string format (argon2id, scrypt) and bcrypt's
 * modular crypt format; string work only. Strict (one canonical spelling), as a stored hash may be
 * attacker input; anything else is `HASH_FORMAT_UNKNOWN`.
 * PHC: https://github.com/P-H-C/phc-string-format/blob/master/phc-sf-spec.md
 */
import { createError } from '../../errors.js'
import type { Argon2Params, BcryptParams, ScryptParams } from '../types.js'

/** Argon2 version 1.3 (0x13), the only one we write. */
export const argon2Version = 19

export interface ParsedArgon2 {
  version: number
  params: Argon2Params
  salt: Buffer
  hash: Buffer
}

export interface ParsedScrypt {
  params: ScryptParams
  salt: Buffer
  hash: Buffer
}

type BcryptVariant = '2a' | '2b' | '2y'

export interface ParsedBcrypt {
  variant: BcryptVariant
  params: BcryptParams
  /** 22 characters of bcrypt's own base64 (`./A-Za-z0-9`). */
  salt: string
  /** 31 characters of bcrypt's own base64. */
  hash: string
}

// Decimal without sign or leading zeros; at most 10 digits so Number() stays exact.
const decimal = /^(?:0|[1-9][0-9]{0,9})$/
const b64 = /^[A-Za-z0-9+/]*$/
const bcryptPattern = /^\$(2[aby])\$([0-9]{2})\$([./A-Za-z0-9]{22})([./A-Za-z0-9]{31})$/

function unknownFormat (why: string): Error {
  // The stored hash itself is never put in the message: it would end up in logs.
  return createError('HASH_FORMAT_UNKNOWN', `The stored hash is not understood: ${why}`)
}

/** PHC base64: standard alphabet, no padding, canonical (re-encodes to the same text). */
function decodeB64 (text: string, what: string): Buffer {
  if (!b64.test(text) || text.length % 4 === 1) throw unknownFormat(`${what} is not unpadded base64`)
  const bytes = Buffer.from(text, 'base64')
  if (encodeB64(bytes) !== text) throw unknownFormat(`${what} is not canonical base64`)
  return bytes
}

function encodeB64 (bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64').replace(/=+$/, '')
}

function parseDecimal (text: string, what: string): number {
  if (!decimal.test(text)) throw unknownFormat(`${what} is not a decimal integer`)
  return Number(text)
}

/** `a=1,b=2` with exactly the expected names, each once, in any order. */
function parseParamList<K extends string> (text: string, names: readonly K[]): Record<K, number> {
  const values = new Map<string, number>()
  for (const pair of text.split(',')) {
    const eq = pair.indexOf('=')
    const name = eq === -1 ? pair : pair.slice(0, eq)
    if (eq === -1 || !(names as readonly string[]).includes(name)) throw unknownFormat(`unexpected parameter '${name.slice(0, 16)}'`)
    if (values.has(name)) throw unknownFormat(`parameter '${name}' is repeated`)
    values.set(name, parseDecimal(pair.slice(eq + 1), `parameter '${name}'`))
  }
  const out: Partial<Record<K, number>> = {}
  for (const name of names) {
    const value = values.get(name)
    if (value === undefined) throw unknownFormat(`parameter '${name}' is missing`)
    out[name] = value
  }
  return out as Record<K, number>
}

/** `$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>` (the version field may be absent: 0x10); `variant` argon2i for imported hashes. */
export function parseArgon2 (stored: string, variant: 'argon2id' | 'argon2i' = 'argon2id'): ParsedArgon2 {
  const fields = stored.split('$')
  // ['', 'argon2id', 'v=19', 'm=..', salt, hash] or without the version field
  if (fields[0] !== '' || fields[1] !== variant) throw unknownFormat(`not an ${variant} PHC string`)
  let rest = fields.slice(2)
  let version = 16
  if (rest[0]?.startsWith('v=') === true) {
    version = parseDecimal(rest[0].slice(2), 'version')
    rest = rest.slice(1)
  }
  if (version !== 16 && version !== 19) throw unknownFormat(`argon2 version ${version} does not exist`)
  const [paramText, saltText, hashText] = rest
  if (rest.length !== 3 || paramText === undefined || saltText === undefined || hashText === undefined) {
    throw unknownFormat(`an ${variant} PHC string has parameters, salt and hash`)
  }
  const { m, t, p } = parseParamList(paramText, ['m', 't', 'p'] as const)
  return {
    version,
    params: { memoryKiB: m, timeCost: t, parallelism: p },
    salt: decodeB64(saltText, 'salt'),
    hash: decodeB64(hashText, 'hash'),
  }
}

export function formatArgon2 (parsed: ParsedArgon2): string {
  const { memoryKiB, timeCost, parallelism } = parsed.params
  return `$argon2id$v=${parsed.version}$m=${memoryKiB},t=${timeCost},p=${parallelism}$${encodeB64(parsed.salt)}$${encodeB64(parsed.hash)}`
}

/** `$scrypt$ln=15,r=8,p=1$<salt>$<hash>`, where N = 2^ln (the passlib spelling). */
export function parseScrypt (stored: string): ParsedScrypt {
  const fields = stored.split('$')
  if (fields[0] !== '' || fields[1] !== 'scrypt') throw unknownFormat('not a scrypt PHC string')
  const [paramText, saltText, hashText] = fields.slice(2)
  if (fields.length !== 5 || paramText === undefined || saltText === undefined || hashText === undefined) {
    throw unknownFormat('a scrypt PHC string has parameters, salt and hash')
  }
  const { ln, r, p } = parseParamList(paramText, ['ln', 'r', 'p'] as const)
  // 2 ** ln stays exact far beyond any bound; limits.ts refuses large ln before any work.
  if (ln < 1 || ln > 62) throw unknownFormat('scrypt ln must be between 1 and 62')
  return { params: { N: 2 ** ln, r, p }, salt: decodeB64(saltText, 'salt'), hash: decodeB64(hashText, 'hash') }
}

export function formatScrypt (parsed: ParsedScrypt): string {
  const { N, r, p } = parsed.params
  return `$scrypt$ln=${log2Exact(N)},r=${r},p=${p}$${encodeB64(parsed.salt)}$${encodeB64(parsed.hash)}`
}

/** log2 of a power of two; throws otherwise (callers pass validated values). */
function log2Exact (n: number): number {
  const ln = Math.log2(n)
  if (!Number.isInteger(ln)) throw new RangeError(`${n} is not a power of two`)
  return ln
}

/** `$2b$10$<22 salt chars><31 hash chars>` (also `$2a$`, `$2y$`). */
export function parseBcrypt (stored: string): ParsedBcrypt {
  const match = bcryptPattern.exec(stored)
  if (match === null) throw unknownFormat('not a bcrypt modular crypt string')
  const [, variant, cost, salt, hash] = match as unknown as [string, BcryptVariant, string, string, string]
  return { variant, params: { cost: Number(cost) }, salt, hash }
}

export function formatBcrypt (parsed: ParsedBcrypt): string {
  return `$${parsed.variant}$${String(parsed.params.cost).padStart(2, '0')}$${parsed.salt}${parsed.hash}`
}
