/** A hash's parameters as the settings that make the service use them, by variable name. */
import type { HashParams } from '../hashing/index.js'

export function envSettingsOf (hash: HashParams): Record<string, string> {
  switch (hash.algorithm) {
    case 'argon2id': return {
      TOLLBOOTH_HASH_ALGORITHM: 'argon2id',
      TOLLBOOTH_ARGON2_MEMORY_KIB: String(hash.params.memoryKiB),
      TOLLBOOTH_ARGON2_TIME_COST: String(hash.params.timeCost),
      TOLLBOOTH_ARGON2_PARALLELISM: String(hash.params.parallelism),
    }
    case 'bcrypt': return { TOLLBOOTH_HASH_ALGORITHM: 'bcrypt', TOLLBOOTH_BCRYPT_COST: String(hash.params.cost) }
    case 'scrypt': return {
      TOLLBOOTH_HASH_ALGORITHM: 'scrypt',
      TOLLBOOTH_SCRYPT_N: String(hash.params.N),
      TOLLBOOTH_SCRYPT_R: String(hash.params.r),
      TOLLBOOTH_SCRYPT_P: String(hash.params.p),
    }
  }
}

/** `m=19456 t=2 p=1`, `cost 10`, `N=131072 r=8 p=1`. */
export function describeParams (hash: HashParams): string {
  switch (hash.algorithm) {
    case 'argon2id': return `m=${hash.params.memoryKiB} t=${hash.params.timeCost} p=${hash.params.parallelism}`
    case 'bcrypt': return `cost ${hash.params.cost}`
    case 'scrypt': return `N=${hash.params.N} r=${hash.params.r} p=${hash.params.p}`
  }
}
