/** Hash policies the tests share. */
import type { HashPolicy } from '../../src/hashing/index.js'

/** Cheap parameters: functional tests must not wait on real-strength hashes. */
export const cheapPolicy: HashPolicy = {
  algorithm: 'argon2id',
  argon2: { memoryKiB: 1024, timeCost: 1, parallelism: 1 },
  bcrypt: { cost: 4 },
  scrypt: { N: 1024, r: 8, p: 1 },
}

/** bcrypt cost 10, as in the seed articles: tens of milliseconds a verify, so a busy thread stays busy long enough to see. */
export const seedPolicy: HashPolicy = { ...cheapPolicy, algorithm: 'bcrypt', bcrypt: { cost: 10 } }
