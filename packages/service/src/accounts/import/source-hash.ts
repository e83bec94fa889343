/**
 * Hash format recognition: a hash as another system stores it, turned into the one spelling the
 * engine verifies for its algorithm (hashing/hashers), then bounded as every stored hash is
 * (`storedHashWithinBounds`: the same bounds a login applies, the hash pool's memory share included). Conversions keep every byte: Django's
 * and passlib's PBKDF2 become `$pbkdf2-sha256$i=..,l=..$salt$hash`, Django's and padded `$scrypt$`
 * spellings become the PHC `$scrypt$ln=..`, a Firebase export's hash and salt become
 * `$firebase-scrypt$` with the project's parameters.
 */
import {
  formatFirebaseScrypt, formatPbkdf2, formatScrypt, noPasswordHash, storedHashWithinBounds, type FirebaseHashParams, type ForeignFormat, type HashAlgorithm, type Pbkdf2Digest, type StoredMemoryBound,
} from '../../hashing/index.js'
import { LineRejected } from './rejection.js'

export type SourceHashFormat = HashAlgorithm | Exclude<ForeignFormat, 'no-password'> | 'none'

export interface StoredForm {
  format: SourceHashFormat
  /** What the users row holds. */
  passwordHash: string
}

function unknown (reason: string): LineRejected {
  return new LineRejected('unknown_hash_format', reason)
}

/** Base64 as the sources write it: standard or passlib's `.` for `+`, padded or not; the bytes. */
function decodeLenientB64 (text: string, what: string): Buffer {
  const standard = text.replaceAll('.', '+')
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(standard) || standard.replace(/=+$/, '').length % 4 === 1) throw unknown(`the ${what} is not base64`)
  return Buffer.from(standard, 'base64')
}

const decimal = /^[1-9][0-9]{0,9}$/

function decimalOf (text: string | undefined, what: string): number {
  if (text === undefined || !decimal.test(text)) throw unknown(`the ${what} is not a positive decimal integer`)
  return Number(text)
}

/** `a=1,b=2` in any order, every name known. */
function paramsOf (text: string, names: readonly string[]): Map<string, number> {
  const values = new Map<string, number>()
  for (const pair of text.split(',')) {
    const [name = '', value, ...rest] = pair.split('=')
    if (!names.includes(name) || rest.length > 0 || values.has(name)) throw unknown(`unexpected parameter '${name.slice(0, 16)}'`)
    values.set(name, decimalOf(value, `parameter '${name}'`))
  }
  return values
}

/** Django `pbkdf2_sha256$<iterations>$<salt text>$<base64 hash>`: the salt is used as its UTF-8 bytes. */
function fromDjangoPbkdf2 (hash: string): string {
  const [, iterations, salt, digest, ...rest] = hash.split('$')
  if (salt === undefined || salt === '' || digest === undefined || rest.length > 0) throw unknown('a Django pbkdf2_sha256 hash is pbkdf2_sha256$<iterations>$<salt>$<hash>')
  return formatPbkdf2({ digest: 'sha256', iterations: decimalOf(iterations, 'PBKDF2 iteration count'), salt: Buffer.from(salt, 'utf8'), hash: decodeLenientB64(digest, 'PBKDF2 hash') })
}

/** passlib `$pbkdf2-sha256$<iterations>$<salt>$<hash>` (adapted base64) or PHC `$pbkdf2-sha256$i=<iterations>[,l=<bytes>]$<salt>$<hash>`. */
function fromPhcPbkdf2 (hash: string, digest: Pbkdf2Digest): string {
  const [, , paramText = '', saltText, hashText, ...rest] = hash.split('$')
  if (saltText === undefined || hashText === undefined || rest.length > 0) throw unknown(`a $pbkdf2-${digest}$ hash has parameters, salt and hash`)
  let iterations: number
  let length: number | undefined
  if (decimal.test(paramText)) {
    iterations = Number(paramText)
  } else {
    const params = paramsOf(paramText, ['i', 'l'])
    iterations = params.get('i') ?? decimalOf(undefined, 'iteration count i')
    length = params.get('l')
  }
  const bytes = decodeLenientB64(hashText, 'PBKDF2 hash')
  if (length !== undefined && length !== bytes.length) throw unknown('the hash length l does not match the hash')
  return formatPbkdf2({ digest, iterations, salt: decodeLenientB64(saltText, 'PBKDF2 salt'), hash: bytes })
}

/**
 * `$scrypt$ln=..,r=..,p=..$salt$hash` as passlib writes it, padded base64 too, or with `ln` holding
 * N itself rather than its log2 (as Ory Kratos's imports write it): an `ln` of 63 or more can only be N.
 */
function fromScrypt (hash: string): string {
  const [, , paramText = '', saltText, hashText, ...rest] = hash.split('$')
  if (saltText === undefined || hashText === undefined || rest.length > 0) throw unknown('a $scrypt$ hash has parameters, salt and hash')
  const params = paramsOf(paramText, ['ln', 'r', 'p'])
  const ln = params.get('ln')
  const r = params.get('r')
  const p = params.get('p')
  if (ln === undefined || r === undefined || p === undefined) throw unknown('a $scrypt$ hash has the parameters ln, r and p')
  const N = ln <= 62 ? 2 ** ln : ln
  if (!Number.isInteger(Math.log2(N))) throw unknown('scrypt N is not a power of two')
  return formatScrypt({ params: { N, r, p }, salt: decodeLenientB64(saltText, 'scrypt salt'), hash: decodeLenientB64(hashText, 'scrypt hash') })
}

/** Django `scrypt$<N>$<salt text>$<r>$<p>$<base64 hash>`: the salt is used as its UTF-8 bytes. */
function fromDjangoScrypt (hash: string): string {
  const [, n, salt, r, p, digest, ...rest] = hash.split('$')
  if (salt === undefined || salt === '' || digest === undefined || rest.length > 0) throw unknown('a Django scrypt hash is scrypt$<N>$<salt>$<r>$<p>$<hash>')
  const N = decimalOf(n, 'scrypt N')
  if (!Number.isInteger(Math.log2(N))) throw unknown('scrypt N is not a power of two')
  return formatScrypt({ params: { N, r: decimalOf(r, 'scrypt r'), p: decimalOf(p, 'scrypt p') }, salt: Buffer.from(salt, 'utf8'), hash: decodeLenientB64(digest, 'scrypt hash') })
}

/** A PHC string's last two fields (salt, hash) without base64 padding. */
function unpaddedTail (hash: string): string {
  const fields = hash.split('$')
  return fields.map((field, index) => index >= fields.length - 2 ? field.replace(/=+$/, '') : field).join('$')
}

/** A Firebase export's base64 hash and salt with the project's parameters. */
function fromFirebase (hash: string, salt: string, firebase: FirebaseHashParams | undefined): string {
  if (firebase === undefined) throw new LineRejected('firebase_params_missing', 'a line with passwordSalt is a Firebase scrypt hash: give the project\'s hash parameters (--firebase-params)')
  return formatFirebaseScrypt({ params: firebase, salt: decodeLenientB64(salt, 'Firebase salt'), hash: decodeLenientB64(hash, 'Firebase hash') })
}

/** The source's spelling turned into ours, and its format; `unknown_hash_format` for anything else. */
function canonical (hash: string, salt: string | undefined, firebase: FirebaseHashParams | undefined): StoredForm {
  if (salt !== undefined) return { format: 'firebase-scrypt', passwordHash: fromFirebase(hash, salt, firebase) }
  if (/^\$2[aby]\$/.test(hash)) return { format: 'bcrypt', passwordHash: hash }
  // argon2's PHC string with its salt and hash unpadded, as Keycloak's converted credentials may not be.
  if (hash.startsWith('$argon2id$')) return { format: 'argon2id', passwordHash: unpaddedTail(hash) }
  if (hash.startsWith('$argon2i$')) return { format: 'argon2i', passwordHash: unpaddedTail(hash) }
  if (hash.startsWith('$scrypt$')) return { format: 'scrypt', passwordHash: fromScrypt(hash) }
  if (hash.startsWith('$pbkdf2-sha256$')) return { format: 'pbkdf2-sha256', passwordHash: fromPhcPbkdf2(hash, 'sha256') }
  if (hash.startsWith('$pbkdf2-sha512$')) return { format: 'pbkdf2-sha512', passwordHash: fromPhcPbkdf2(hash, 'sha512') }
  if (hash.startsWith('$firebase-scrypt$')) return { format: 'firebase-scrypt', passwordHash: hash }
  // Django's algorithm$... spellings.
  if (hash.startsWith('pbkdf2_sha256$')) return { format: 'pbkdf2-sha256', passwordHash: fromDjangoPbkdf2(hash) }
  if (hash.startsWith('scrypt$')) return { format: 'scrypt', passwordHash: fromDjangoScrypt(hash) }
  if (hash.startsWith('argon2$argon2')) return canonical(hash.slice('argon2'.length), undefined, firebase)
  if (hash.startsWith('bcrypt$$2')) return canonical(hash.slice('bcrypt$'.length), undefined, firebase)
  if (hash.startsWith('bcrypt_sha256$')) throw unknown('Django\'s bcrypt_sha256 hashes a SHA-256 of the password, which tollbooth does not verify')
  if (hash.startsWith('!') || hash === '') throw unknown('an unusable password (Django\'s "!"): leave passwordHash out, and the account gets a reset link')
  throw unknown('no known hash format (bcrypt, argon2id, argon2i, scrypt, PBKDF2-SHA256/512, Django, Firebase scrypt)')
}

/**
 * What a line's `passwordHash` (and Firebase's `passwordSalt`) is stored as: its format and the
 * users row's value; no hash: an account without a password. Throws `LineRejected`.
 */
export function storedFormOf (hash: string | undefined, salt: string | undefined, firebase: FirebaseHashParams | undefined, memoryBound: StoredMemoryBound | undefined): StoredForm {
  if (hash === undefined) {
    if (salt !== undefined) throw new LineRejected('invalid_field', 'passwordSalt without passwordHash')
    return { format: 'none', passwordHash: noPasswordHash }
  }
  const form = canonical(hash, salt, firebase)
  const check = storedHashWithinBounds(form.passwordHash, memoryBound)
  if (!check.ok) throw check.code === 'HASH_PARAMS_OUT_OF_BOUNDS' ? new LineRejected('hash_out_of_bounds', check.reason) : unknown(check.reason)
  return form
}
