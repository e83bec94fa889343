/**
 * What one hash holds in memory while it runs, and whether a pool of threads all running one at
 * once fits a memory budget. Each thread may hold budget ÷ threads: the policy's hash must fit
 * that share, and stored hashes are bounded by it (limits.ts), so a full pool never holds more
 * than its budget, whatever the stored hashes ask for.
 */
import type { Argon2Params, BcryptParams, HashAlgorithm, HashPolicy, ScryptParams } from './types.js'
import type { ForeignStoredHash } from './hashers/index.js'

/** One algorithm with its parameters: a policy's choice, a stored hash's, a calibration candidate. */
export type HashParams =
  | { algorithm: 'argon2id', params: Argon2Params }
  | { algorithm: 'bcrypt', params: BcryptParams }
  | { algorithm: 'scrypt', params: ScryptParams }

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB

/** bcrypt's state (four 256-word S-boxes and the key schedule), about 4 KiB whatever the cost. */
const bcryptStateBytes = 4 * KiB

/** The memory one hash or verify holds: argon2's m KiB, scrypt's 128·N·r bytes, bcrypt's state; an imported hash's as its verifier says. */
export function hashMemoryBytes (hash: HashParams | ForeignStoredHash): number {
  switch (hash.algorithm) {
    case 'foreign': return hash.memoryBytes
    case 'argon2id': return hash.params.memoryKiB * KiB
    case 'bcrypt': return bcryptStateBytes
    case 'scrypt': return 128 * hash.params.N * hash.params.r
  }
}

/** The policy's algorithm with its parameters. */
export function policyHashParams (policy: HashPolicy): HashParams {
  switch (policy.algorithm) {
    case 'argon2id': return { algorithm: 'argon2id', params: policy.argon2 }
    case 'bcrypt': return { algorithm: 'bcrypt', params: policy.bcrypt }
    case 'scrypt': return { algorithm: 'scrypt', params: policy.scrypt }
  }
}

/** What one of `threads` hash threads may hold within `budgetBytes`. */
function perThreadMemoryBytes (threads: number, budgetBytes: number): number {
  return Math.floor(budgetBytes / threads)
}

/** The largest memory parameter of `algorithm` that fits `bytes`: argon2's m in KiB, scrypt's N (a power of two) at `r`. */
export function largestMemoryParam (algorithm: 'argon2id' | 'scrypt', bytes: number, r: number): number | undefined {
  if (algorithm === 'argon2id') {
    const memoryKiB = Math.floor(bytes / KiB)
    return memoryKiB >= 8 ? memoryKiB : undefined
  }
  const log2N = Math.floor(Math.log2(bytes / (128 * r)))
  return log2N >= 1 ? 2 ** log2N : undefined
}

/** A pool whose threads, each running the policy's hash, would hold more than the budget. */
export interface PoolMemoryMisfit {
  algorithm: HashAlgorithm
  threads: number
  perHashBytes: number
  budgetBytes: number
  /** The most threads that fit with this hash; 0 when not even one does. */
  maxThreads: number
  /** The largest memory parameter that fits each of `threads` threads (argon2 m KiB, scrypt N); undefined for bcrypt, or when none does. */
  largestParam: number | undefined
}

/** Undefined when `threads` hashes of the policy fit `budgetBytes` at once; else what does fit. */
export function poolMemoryMisfit (policy: HashPolicy, threads: number, budgetBytes: number): PoolMemoryMisfit | undefined {
  const hash = policyHashParams(policy)
  const perHashBytes = hashMemoryBytes(hash)
  if (perHashBytes * threads <= budgetBytes) return undefined
  const share = perThreadMemoryBytes(threads, budgetBytes)
  return {
    algorithm: hash.algorithm,
    threads,
    perHashBytes,
    budgetBytes,
    maxThreads: Math.floor(budgetBytes / perHashBytes),
    largestParam: hash.algorithm === 'bcrypt' ? undefined : largestMemoryParam(hash.algorithm, share, policy.scrypt.r),
  }
}

/** How a misfit's message names what the reader can change: `threads`, or TOLLBOOTH_HASH_THREADS. */
export interface MisfitNames {
  threads: string
  /** The budget and where it came from: `the hash memory budget of 512 MiB (TOLLBOOTH_HASH_MEMORY_BUDGET=50% of ...)`. */
  budget: string
  argon2MemoryKiB: string
  scryptN: string
  /** The last remedy: `a larger TOLLBOOTH_HASH_MEMORY_BUDGET`. */
  largerBudget: string
}

/** `4 threads × 256 MiB argon2id = 1 GiB > <budget>: use at most 2 threads (<threads>), or <argon2MemoryKiB> at most 131072, or <largerBudget>` */
export function describeMemoryMisfit (misfit: PoolMemoryMisfit, names: MisfitNames): string {
  const { algorithm, threads, perHashBytes, maxThreads, largestParam } = misfit
  const total = `${threads} hash thread${threads === 1 ? '' : 's'} × ${formatBytes(perHashBytes)} ${algorithm} = ${formatBytes(threads * perHashBytes)} > ${names.budget}`
  const remedies: string[] = []
  if (maxThreads > 0) remedies.push(`use at most ${maxThreads} thread${maxThreads === 1 ? '' : 's'} (${names.threads})`)
  if (largestParam !== undefined) remedies.push(`${algorithm === 'argon2id' ? names.argon2MemoryKiB : names.scryptN} at most ${largestParam} at ${threads} thread${threads === 1 ? '' : 's'}`)
  remedies.push(names.largerBudget)
  return `${total}: ${maxThreads === 0 ? 'not even one thread fits; ' : ''}${remedies.join(', or ')}`
}

/**
 * What one verify may hold, from the pool's memory budget: a stored hash above it is refused
 * before it is queued (limits.ts), tighter than the fixed bounds when threads × those would not fit.
 */
export interface StoredMemoryBound {
  perThreadBytes: number
  /** Why, quoted in the refusal: `2 hash threads share a memory budget of 128 MiB`. */
  reason: string
}

/** The bound a pool of `threads` threads sharing `budgetBytes` puts on each verify. */
export function storedMemoryBound (threads: number, budgetBytes: number): StoredMemoryBound {
  return {
    perThreadBytes: perThreadMemoryBytes(threads, budgetBytes),
    reason: `${threads} hash thread${threads === 1 ? '' : 's'} share a memory budget of ${formatBytes(budgetBytes)}`,
  }
}

/** `4 KiB`, `768 MiB`, `1 GiB`, `11.8 GiB`, `1.5 MiB`: the largest unit that leaves at least 1, one decimal at most. */
export function formatBytes (bytes: number): string {
  const shown = (value: number, unit: string): string => `${Number.isInteger(value) ? value : value.toFixed(1)} ${unit}`
  if (bytes >= GiB) return shown(bytes / GiB, 'GiB')
  if (bytes >= MiB) return shown(bytes / MiB, 'MiB')
  if (bytes >= KiB) return shown(bytes / KiB, 'KiB')
  return `${bytes} bytes`
}
