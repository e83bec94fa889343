/**
 * The floor calibration never goes below: the OWASP Password Storage Cheat Sheet's minimum for
 * each algorithm. argon2id's five settings are equivalent (about the same work, more memory for
 * fewer passes); a candidate meets the floor when its memory reaches the one for its passes.
 */
import type { HashAlgorithm, HashParams } from '../hashing/index.js'

/** argon2id: the least m (KiB) for t passes; from 5 passes on, 7 MiB. */
export function argon2MinimumMemoryKiB (timeCost: number): number {
  if (timeCost <= 1) return 47104
  if (timeCost === 2) return 19456
  if (timeCost === 3) return 12288
  if (timeCost === 4) return 9216
  return 7168
}

/** scrypt: N=2^17 (128 MiB at r=8), r=8, p=1. */
export const scryptMinimum = { N: 2 ** 17, r: 8, p: 1 } as const

/** bcrypt: cost 10. */
export const bcryptMinimumCost = 10

/** The setting OWASP names first for each algorithm, which calibration prints when the target is below it. */
export function owaspMinimum (algorithm: HashAlgorithm): HashParams {
  switch (algorithm) {
    case 'argon2id': return { algorithm, params: { memoryKiB: 19456, timeCost: 2, parallelism: 1 } }
    case 'bcrypt': return { algorithm, params: { cost: bcryptMinimumCost } }
    case 'scrypt': return { algorithm, params: { ...scryptMinimum } }
  }
}

/** Whether `hash` meets OWASP's minimum for its algorithm. */
export function meetsOwaspMinimum (hash: HashParams): boolean {
  switch (hash.algorithm) {
    case 'argon2id': return hash.params.parallelism >= 1 && hash.params.memoryKiB >= argon2MinimumMemoryKiB(hash.params.timeCost)
    case 'bcrypt': return hash.params.cost >= bcryptMinimumCost
    case 'scrypt': return hash.params.N >= scryptMinimum.N && hash.params.r >= scryptMinimum.r && hash.params.p >= scryptMinimum.p
  }
}
