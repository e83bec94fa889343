/**
 * Bounds on hashing parameters, each with the reason it exists. A stored hash is attacker input
 * (an import, a compromised admin tool, an SQL injection elsewhere chooses its cost): a `$2b$31$`
 * bcrypt hash or a 4 GiB argon2 hash would take a thread for hours or the process's memory. So
 * every stored hash is bounded on the main thread before it is queued, and the policy by the same
 * numbers, so every hash we make is one we accept. The pool's memory budget bounds a stored
 * hash's memory further (memory-fit.ts `StoredMemoryBound`).
 */
import { Type } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { createError, isTollboothError, type ErrorCode } from '../errors.js'
import { foreignVerifierFor, parseArgon2, parseBcrypt, parseScrypt, type ForeignStoredHash } from './hashers/index.js'
import { formatBytes, hashMemoryBytes, largestMemoryParam, type StoredMemoryBound } from './memory-fit.js'
import { hashAlgorithms, type Argon2Params, type BcryptParams, type HashPolicy, type ScryptParams } from './types.js'
import { firstFault } from './validate.js'

export interface Bound {
  min: number
  max: number
  /** Why the bound is there, quoted in the error message. */
  reason: string
}

const MiB = 1024 * 1024

export const hashLimits = {
  /** Longest stored hash string we parse at all. */
  storedLength: { min: 1, max: 512, reason: 'our longest legitimate hash is under 200 characters; longer is not a hash' },
  argon2: {
    memoryKiB: { min: 8, max: 256 * 1024, reason: 'each running verify holds m KiB; 256 MiB per thread is already far beyond OWASP (19 MiB)' },
    timeCost: { min: 1, max: 16, reason: 'passes multiply the time; 16 passes over the largest memory is seconds per verify' },
    parallelism: { min: 1, max: 16, reason: 'lanes run on one worker thread here, so more lanes only add overhead' },
    saltBytes: { min: 8, max: 64, reason: 'argon2 requires at least 8 bytes; more than 64 is not a salt we or a sane tool made' },
    hashBytes: { min: 16, max: 128, reason: 'shorter tags are too weak to trust; longer ones add work and no security' },
  },
  bcrypt: {
    cost: { min: 4, max: 16, reason: 'cost doubles the time per step: cost 16 is ~64x cost 10 (seconds); cost 31 would run for days' },
  },
  scrypt: {
    log2N: { min: 1, max: 20, reason: 'N doubles both time and memory; 2^20 is 1 GiB at r=8 (see memoryBytes)' },
    r: { min: 1, max: 32, reason: 'block size multiplies time and memory; OWASP uses 8' },
    p: { min: 1, max: 16, reason: 'scrypt runs its p lanes one after another here, so p multiplies the time' },
    memoryBytes: { min: 0, max: 256 * MiB, reason: 'one verify holds 128·N·r bytes; above 256 MiB a few concurrent verifies exhaust memory' },
    saltBytes: { min: 8, max: 64, reason: 'shorter salts collide; more than 64 bytes is not a salt we or a sane tool made' },
    hashBytes: { min: 16, max: 128, reason: 'shorter tags are too weak to trust; longer ones add work and no security' },
  },
} as const satisfies {
  storedLength: Bound
  argon2: Record<string, Bound>
  bcrypt: Record<string, Bound>
  scrypt: Record<string, Bound>
}

/**
 * What new hashes are made with unless configured otherwise.
 * - argon2id m=19 MiB, t=2, p=1: the first of OWASP's argon2id settings, and @node-rs/argon2's default.
 * - bcrypt cost 10: OWASP's minimum for legacy systems.
 * - scrypt N=2^15, r=8, p=1: 32 MiB, near argon2's memory; below OWASP's N=2^17 (four times the
 *   memory), as scrypt is here for imported hashes and comparison. Raise N or p for OWASP.
 */
export const defaultPolicy: HashPolicy = Object.freeze({
  algorithm: 'argon2id' as const,
  argon2: Object.freeze({ memoryKiB: 19456, timeCost: 2, parallelism: 1 }),
  bcrypt: Object.freeze({ cost: 10 }),
  scrypt: Object.freeze({ N: 2 ** 15, r: 8, p: 1 }),
})

export type StoredHash =
  | { algorithm: 'argon2id', params: Argon2Params, version: number }
  | { algorithm: 'bcrypt', params: BcryptParams }
  | { algorithm: 'scrypt', params: ScryptParams }
  | ForeignStoredHash

type Refuse = (what: string, value: number, bound: Bound) => never

function checkBound (value: number, what: string, bound: Bound, refuse: Refuse): void {
  if (!Number.isSafeInteger(value) || value < bound.min || value > bound.max) refuse(what, value, bound)
}

function storedRefusal (code: ErrorCode): Refuse {
  return (what, value, bound) => {
    throw createError(code, `The stored hash's ${what} is ${value}, outside ${bound.min}..${bound.max}: ${bound.reason}`)
  }
}

const refuseStored = storedRefusal('HASH_PARAMS_OUT_OF_BOUNDS')

function checkArgon2 (params: Argon2Params, refuse: Refuse, prefix: string): void {
  const limits = hashLimits.argon2
  checkBound(params.parallelism, `${prefix}parallelism`, limits.parallelism, refuse)
  checkBound(params.timeCost, `${prefix}timeCost`, limits.timeCost, refuse)
  checkBound(params.memoryKiB, `${prefix}memoryKiB`, { ...limits.memoryKiB, min: 8 * params.parallelism, reason: `${limits.memoryKiB.reason}; argon2 needs 8 KiB per lane` }, refuse)
}

function checkBcrypt (params: BcryptParams, refuse: Refuse, prefix: string): void {
  checkBound(params.cost, `${prefix}cost`, hashLimits.bcrypt.cost, refuse)
}

function checkScrypt (params: ScryptParams, refuse: Refuse, prefix: string): void {
  const limits = hashLimits.scrypt
  const log2N = Math.log2(params.N)
  if (!Number.isInteger(log2N) || log2N < limits.log2N.min || log2N > limits.log2N.max) {
    refuse(`${prefix}N`, params.N, { min: 2 ** limits.log2N.min, max: 2 ** limits.log2N.max, reason: `N must be a power of two; ${limits.log2N.reason}` })
  }
  checkBound(params.r, `${prefix}r`, limits.r, refuse)
  checkBound(params.p, `${prefix}p`, limits.p, refuse)
  // Expressed as a bound on N for the given r, so the message names a real field.
  const maxN = Math.floor(limits.memoryBytes.max / (128 * params.r))
  if (128 * params.N * params.r > limits.memoryBytes.max) refuse(`${prefix}N`, params.N, { min: 2, max: maxN, reason: `at r=${params.r}: ${limits.memoryBytes.reason}` })
}

/** Refuses a stored hash that would hold more than one thread's share of the budget, naming the parameter to blame. */
function checkStoredMemory (stored: StoredHash, bound: StoredMemoryBound): void {
  const bytes = hashMemoryBytes(stored)
  if (bytes <= bound.perThreadBytes) return
  const reason = `${bound.reason}, so one verify may hold at most ${formatBytes(bound.perThreadBytes)}`
  switch (stored.algorithm) {
    case 'argon2id':
      refuseStored('argon2 memoryKiB', stored.params.memoryKiB, { min: 8 * stored.params.parallelism, max: largestMemoryParam('argon2id', bound.perThreadBytes, 1) ?? 0, reason })
      break
    case 'scrypt':
      refuseStored('scrypt N', stored.params.N, { min: 2, max: largestMemoryParam('scrypt', bound.perThreadBytes, stored.params.r) ?? 0, reason: `at r=${stored.params.r}: ${reason}` })
      break
    case 'bcrypt':
      refuseStored('bcrypt state in bytes', bytes, { min: 0, max: bound.perThreadBytes, reason })
      break
    case 'foreign':
      refuseStored(`${stored.format} memory in bytes`, bytes, { min: 0, max: bound.perThreadBytes, reason })
  }
}

function parseStoredHash (stored: string): StoredHash {
  if (stored.startsWith('$argon2id$')) {
    const parsed = parseArgon2(stored)
    checkArgon2(parsed.params, refuseStored, 'argon2 ')
    checkBound(parsed.salt.length, 'argon2 salt length in bytes', hashLimits.argon2.saltBytes, refuseStored)
    checkBound(parsed.hash.length, 'argon2 hash length in bytes', hashLimits.argon2.hashBytes, refuseStored)
    return { algorithm: 'argon2id', params: parsed.params, version: parsed.version }
  }
  if (stored.startsWith('$2')) {
    const parsed = parseBcrypt(stored)
    checkBcrypt(parsed.params, refuseStored, 'bcrypt ')
    return { algorithm: 'bcrypt', params: parsed.params }
  }
  if (stored.startsWith('$scrypt$')) {
    const parsed = parseScrypt(stored)
    checkScrypt(parsed.params, refuseStored, 'scrypt ')
    checkBound(parsed.salt.length, 'scrypt salt length in bytes', hashLimits.scrypt.saltBytes, refuseStored)
    checkBound(parsed.hash.length, 'scrypt hash length in bytes', hashLimits.scrypt.hashBytes, refuseStored)
    return { algorithm: 'scrypt', params: parsed.params }
  }
  // Another system's hash (an imported account): its verifier bounds its own parameters.
  const foreign = foreignVerifierFor(stored)
  if (foreign !== undefined) return foreign.inspect(stored)
  throw createError('HASH_FORMAT_UNKNOWN', 'The stored hash has no known algorithm prefix')
}

/**
 * Parses and bounds a stored hash: `HASH_FORMAT_UNKNOWN` when not one of ours,
 * `HASH_PARAMS_OUT_OF_BOUNDS` when its cost is absurd or it would hold more than `memoryBound`.
 */
export function inspectStoredHash (stored: string, memoryBound?: StoredMemoryBound): StoredHash {
  if (typeof stored !== 'string') throw createError('HASH_FORMAT_UNKNOWN', 'The stored hash is not a string')
  if (stored.length > hashLimits.storedLength.max) {
    throw createError('HASH_FORMAT_UNKNOWN', `The stored hash is ${stored.length} characters long: ${hashLimits.storedLength.reason}`)
  }
  const parsed = parseStoredHash(stored)
  if (memoryBound !== undefined) checkStoredMemory(parsed, memoryBound)
  return parsed
}

export type StoredHashCheck =
  | { ok: true, stored: StoredHash }
  | { ok: false, code: 'HASH_FORMAT_UNKNOWN' | 'HASH_PARAMS_OUT_OF_BOUNDS', reason: string }

/**
 * The check a verify makes before it queues a stored hash, as a value rather than a throw: for
 * whoever judges hashes before they are stored (an import), so a hash the service would refuse is
 * never stored. `memoryBound`: the running pool's (`storedMemoryBound(threads, budgetBytes)`);
 * without it, the fixed bounds alone. Parses only, never hashes.
 */
export function storedHashWithinBounds (stored: string, memoryBound?: StoredMemoryBound): StoredHashCheck {
  try {
    return { ok: true, stored: inspectStoredHash(stored, memoryBound) }
  } catch (err) {
    if (isTollboothError(err, 'HASH_FORMAT_UNKNOWN')) return { ok: false, code: 'HASH_FORMAT_UNKNOWN', reason: err.message }
    if (isTollboothError(err, 'HASH_PARAMS_OUT_OF_BOUNDS')) return { ok: false, code: 'HASH_PARAMS_OUT_OF_BOUNDS', reason: err.message }
    throw err
  }
}

function configError (field: string, message: string): never {
  throw createError('CONFIG_INVALID', `${field} ${message}`, { field })
}

const refusePolicy: Refuse = (what, value, bound) => {
  configError(what, `is ${String(value)}, it must be an integer from ${bound.min} to ${bound.max}: ${bound.reason}`)
}

/** The policy's shape; its bounds, each with a reason, are checked after it (checkArgon2 ...). */
const PolicyShape = TypeCompiler.Compile(Type.Object({
  algorithm: Type.Union(hashAlgorithms.map((name) => Type.Literal(name))),
  argon2: Type.Object({ memoryKiB: Type.Integer(), timeCost: Type.Integer(), parallelism: Type.Integer() }),
  bcrypt: Type.Object({ cost: Type.Integer() }),
  scrypt: Type.Object({ N: Type.Integer(), r: Type.Integer(), p: Type.Integer() }),
}))

/** Throws `CONFIG_INVALID` naming the first field at fault; all three algorithms' sets are checked, so switching reveals nothing broken. */
export function validatePolicy (policy: unknown): asserts policy is HashPolicy {
  const fault = firstFault(PolicyShape, policy, 'policy')
  if (fault !== undefined) configError(fault.field, fault.message)
  const checked = policy as HashPolicy
  checkArgon2(checked.argon2, refusePolicy, 'policy.argon2.')
  checkBcrypt(checked.bcrypt, refusePolicy, 'policy.bcrypt.')
  checkScrypt(checked.scrypt, refusePolicy, 'policy.scrypt.')
}
