/** Hash policies the tests share. */
import type { HashPolicy } from '../../src/hashing/index.js'
import { bcryptHasher } from '../../src/hashing/hashers/bcrypt.js'

/** Cheap parameters: functional tests must not wait on real-strength hashes. */
export const cheapPolicy: HashPolicy = {
  algorithm: 'argon2id',
  argon2: { memoryKiB: 1024, timeCost: 1, parallelism: 1 },
  bcrypt: { cost: 4 },
  scrypt: { N: 1024, r: 8, p: 1 },
}

/** bcrypt cost 10, as in the seed articles: tens of milliseconds a verify, so a busy thread stays busy long enough to see. */
export const seedPolicy: HashPolicy = { ...cheapPolicy, algorithm: 'bcrypt', bcrypt: { cost: 10 } }

/**
 * A well-formed bcrypt hash at `cost` that no password matches, made without paying for it: a
 * cost-4 hash's salt and digest under the higher cost. Verifying it takes the full time of that
 * cost, so it keeps a hash thread busy, while the test's own thread made it in a millisecond.
 */
export function slowBcryptHash (cost: number): string {
  return bcryptHasher.hashSync('a password nobody sends', { cost: 4 }).replace(/^\$2([aby])\$04\$/, (_, variant: string) => `$2${variant}$${String(cost).padStart(2, '0')}$`)
}
