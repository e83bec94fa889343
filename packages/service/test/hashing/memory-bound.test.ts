import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createPasswordEngine, storedHashWithinBounds, storedMemoryBound, type HashPolicy, type PasswordEngine } from '../../src/hashing/index.js'
import { cheapPolicy, rejection } from './fixtures.js'

const MiB = 1024 * 1024
const salt = 'c2FsdHNhbHRzYWx0c2FsdA' // 16 bytes
const tag = 'aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g' // 32 bytes
const bcryptTail = 'abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234'
const argon2 = (memoryKiB: number, t = 1, p = 1): string => `$argon2id$v=19$m=${memoryKiB},t=${t},p=${p}$${salt}$${tag}`
const scrypt = (log2N: number, r = 8, p = 1): string => `$scrypt$ln=${log2N},r=${r},p=${p}$${salt}$${tag}`

describe('storedHashWithinBounds: the check a verify makes, as a value (for an import)', () => {
  it('refuses crafted hashes past the fixed bounds, each with the bound and its reason', () => {
    const crafted: Array<[string, string, RegExp]> = [
      ['argon2 m=4 GiB', argon2(4 * 1024 * 1024), /memoryKiB is 4194304, outside 8\.\.262144/],
      ['argon2 t=1000', argon2(1024, 1000), /timeCost is 1000, outside 1\.\.16/],
      ['argon2 p=64', argon2(4096, 1, 64), /parallelism is 64, outside 1\.\.16/],
      ['scrypt N=2^24', scrypt(24), /N is 16777216, outside 2\.\.1048576/],
      ['scrypt N=2^19 r=8 (512 MiB)', scrypt(19), /N is 524288, outside 2\.\.262144: at r=8/],
      ['scrypt p=100', scrypt(10, 8, 100), /p is 100, outside 1\.\.16/],
      ['bcrypt cost 31', `$2b$31$${bcryptTail}`, /cost is 31, outside 4\.\.16/],
    ]
    for (const [what, stored, reason] of crafted) {
      const check = storedHashWithinBounds(stored)
      assert.equal(check.ok, false, what)
      if (check.ok) continue
      assert.equal(check.code, 'HASH_PARAMS_OUT_OF_BOUNDS', what)
      assert.match(check.reason, reason, what)
      assert.ok(!check.reason.includes(salt), 'the stored hash is not echoed')
    }
  })

  it('names what is not a hash as HASH_FORMAT_UNKNOWN', () => {
    for (const stored of ['', 'hunter2', '$1$md5crypt$abc', '$argon2id$' + 'x'.repeat(1000)]) {
      const check = storedHashWithinBounds(stored)
      assert.ok(!check.ok && check.code === 'HASH_FORMAT_UNKNOWN', stored.slice(0, 20))
    }
  })

  it('accepts a hash within bounds and gives its parameters', () => {
    assert.deepEqual(storedHashWithinBounds(argon2(19456, 2)), { ok: true, stored: { algorithm: 'argon2id', params: { memoryKiB: 19456, timeCost: 2, parallelism: 1 }, version: 19 } })
    assert.deepEqual(storedHashWithinBounds(scrypt(17)), { ok: true, stored: { algorithm: 'scrypt', params: { N: 2 ** 17, r: 8, p: 1 } } })
  })

  it('with a pool\'s memory bound: a hash above one thread\'s share is refused, naming the largest that fits', () => {
    const bound = storedMemoryBound(4, 128 * MiB) // 32 MiB a thread
    assert.deepEqual(bound, { perThreadBytes: 32 * MiB, reason: '4 hash threads share a memory budget of 128 MiB' })
    const argon = storedHashWithinBounds(argon2(65536), bound)
    assert.ok(!argon.ok && argon.code === 'HASH_PARAMS_OUT_OF_BOUNDS')
    assert.match(argon.reason, /argon2 memoryKiB is 65536, outside 8\.\.32768: 4 hash threads share a memory budget of 128 MiB, so one verify may hold at most 32 MiB/)
    const scr = storedHashWithinBounds(scrypt(16, 8), bound) // 64 MiB
    assert.ok(!scr.ok)
    assert.match(scr.reason, /scrypt N is 65536, outside 2\.\.32768: at r=8/)
    assert.equal(storedHashWithinBounds(argon2(32768), bound).ok, true, 'exactly the share fits')
    assert.equal(storedHashWithinBounds(scrypt(15, 8), bound).ok, true)
    assert.equal(storedHashWithinBounds(`$2b$10$${bcryptTail}`, storedMemoryBound(256, MiB)).ok, true, 'bcrypt holds about 4 KiB')
  })
})

describe('a memory-bounded pool', () => {
  let engine: PasswordEngine
  before(async () => {
    // 2 threads sharing 8 MiB: 4 MiB a verify; the policy's 1 MiB argon2 fits.
    engine = await createPasswordEngine({ policy: cheapPolicy, threads: 2, memoryBudgetBytes: 8 * MiB })
  })
  after(async () => { await engine.close() })

  it('reports its budget and each thread\'s share', () => {
    assert.deepEqual(engine.memory, { budgetBytes: 8 * MiB, perThreadBytes: 4 * MiB })
  })

  it('refuses a stored hash above a thread\'s share before it costs memory or CPU, and verifies one within it', async () => {
    const completedBefore = engine.stats().completed
    for (const stored of [argon2(8192), argon2(65536, 2), scrypt(13, 8), scrypt(12, 16)]) {
      const err = await rejection(engine.verify('password', stored), 'HASH_PARAMS_OUT_OF_BOUNDS')
      assert.match(err.message, /2 hash threads share a memory budget of 8 MiB, so one verify may hold at most 4 MiB/)
    }
    const stats = engine.stats()
    assert.equal(stats.completed, completedBefore, 'no hash ran')
    assert.equal(stats.running + stats.queued, 0)
    const good = await engine.hash('password')
    assert.deepEqual(await engine.verify('password', good), { match: true, needsRehash: false })
  })
})

describe('a pool that would not fit its memory budget is refused at start', () => {
  const refusal = async (policy: HashPolicy, threads: number, budgetBytes: number): Promise<string> => {
    const err = await rejection(createPasswordEngine({ policy, threads, memoryBudgetBytes: budgetBytes }), 'CONFIG_INVALID')
    assert.equal(err.field, 'memoryBudgetBytes')
    return err.message
  }

  it('argon2: names the threads and the memory that fit', async () => {
    const message = await refusal({ ...cheapPolicy, argon2: { memoryKiB: 65536, timeCost: 1, parallelism: 1 } }, 4, 128 * MiB)
    assert.equal(message, '4 hash threads × 64 MiB argon2id = 256 MiB > the memory budget of 128 MiB (options.memoryBudgetBytes): use at most 2 threads (options.threads), or policy.argon2.memoryKiB at most 32768 at 4 threads, or a larger options.memoryBudgetBytes')
  })

  it('scrypt: the largest power-of-two N that fits at this r', async () => {
    const message = await refusal({ ...cheapPolicy, algorithm: 'scrypt', scrypt: { N: 2 ** 15, r: 8, p: 1 } }, 4, 64 * MiB)
    assert.match(message, /^4 hash threads × 32 MiB scrypt = 128 MiB > .*: use at most 2 threads \(options\.threads\), or policy\.scrypt\.N at most 16384 at 4 threads/)
  })

  it('not even one thread fits', async () => {
    const message = await refusal({ ...cheapPolicy, argon2: { memoryKiB: 65536, timeCost: 1, parallelism: 1 } }, 1, 16 * MiB)
    assert.match(message, /not even one thread fits; policy\.argon2\.memoryKiB at most 16384 at 1 thread, or a larger/)
  })

  it('the algorithm in use decides: a large argon2 m does not refuse a bcrypt pool', async () => {
    const bcryptPool = await createPasswordEngine({ policy: { ...cheapPolicy, algorithm: 'bcrypt', argon2: { memoryKiB: 65536, timeCost: 1, parallelism: 1 } }, threads: 2, memoryBudgetBytes: 16 * MiB })
    await bcryptPool.close()
  })
})
