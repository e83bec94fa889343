import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createPasswordEngine, defaultPolicy, hashLimits, validatePolicy, type HashPolicy, type HashTaskEvent, type PasswordEngine } from '../../src/hashing/index.js'
import { inspectStoredHash } from '../../src/hashing/limits.js'
import { cheapPolicy, rejection, thrown } from './fixtures.js'

const salt = 'c2FsdHNhbHRzYWx0c2FsdA' // 16 bytes
const tag = 'aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g' // 32 bytes
const bcryptTail = 'abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234'

/** Stored hashes whose cost would take a thread for hours or the memory with it. */
const absurd: Array<[string, string]> = [
  ['bcrypt cost 31 (days of CPU)', `$2b$31$${bcryptTail}`],
  ['bcrypt cost 17', `$2b$17$${bcryptTail}`],
  ['argon2 m=4194304 KiB (4 GiB)', `$argon2id$v=19$m=4194304,t=1,p=1$${salt}$${tag}`],
  ['argon2 t=1000', `$argon2id$v=19$m=1024,t=1000,p=1$${salt}$${tag}`],
  ['argon2 p=255', `$argon2id$v=19$m=4096,t=1,p=255$${salt}$${tag}`],
  ['argon2 m below 8 KiB per lane', `$argon2id$v=19$m=16,t=1,p=4$${salt}$${tag}`],
  ['argon2 4-byte salt', `$argon2id$v=19$m=1024,t=1,p=1$c2FsdA$${tag}`],
  ['scrypt ln=30 (N=2^30)', `$scrypt$ln=30,r=8,p=1$${salt}$${tag}`],
  ['scrypt ln=20 r=8 (1 GiB)', `$scrypt$ln=20,r=8,p=1$${salt}$${tag}`],
  ['scrypt r=1000', `$scrypt$ln=10,r=1000,p=1$${salt}$${tag}`],
  ['scrypt p=100', `$scrypt$ln=10,r=8,p=100$${salt}$${tag}`],
]

describe('bounds on stored hashes (attacker input)', () => {
  let engine: PasswordEngine
  const events: HashTaskEvent[] = []
  before(async () => {
    engine = await createPasswordEngine({ policy: cheapPolicy, threads: 1 })
    engine.onTask((event) => { events.push(event) })
  })
  after(async () => { await engine.close() })

  it('refuses absurd parameters with HASH_PARAMS_OUT_OF_BOUNDS at once, without queueing a hash', async () => {
    for (const [what, stored] of absurd) {
      const started = performance.now()
      const err = await rejection(engine.verify('password', stored), 'HASH_PARAMS_OUT_OF_BOUNDS')
      // Generous: computing any of these would take seconds to days.
      assert.ok(performance.now() - started < 1000, `${what} was refused quickly`)
      assert.ok(!err.message.includes(salt), 'the stored hash is not echoed')
    }
    const stats = engine.stats()
    assert.equal(stats.completed, 0, 'no hash ran')
    assert.equal(stats.running + stats.queued, 0)
    assert.equal(stats.failed, absurd.length)
    assert.equal(events.length, absurd.length)
    assert.ok(events.every((e) => e.outcome === 'error' && e.runMs === 0 && e.waitMs === 0))
  })

  it('refuses what is not a hash with HASH_FORMAT_UNKNOWN', async () => {
    for (const stored of ['', 'hunter2', '$1$md5crypt$abc', '$argon2d$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaA', '$argon2id$' + 'x'.repeat(10_000)]) {
      await rejection(engine.verify('password', stored), 'HASH_FORMAT_UNKNOWN')
    }
    assert.equal(engine.stats().completed, 0)
  })

  it('accepts every bound edge it documents', () => {
    const max = hashLimits
    assert.equal(inspectStoredHash(`$2b$${max.bcrypt.cost.max}$${bcryptTail}`).algorithm, 'bcrypt')
    assert.equal(inspectStoredHash(`$argon2id$v=19$m=${max.argon2.memoryKiB.max},t=${max.argon2.timeCost.max},p=${max.argon2.parallelism.max}$${salt}$${tag}`).algorithm, 'argon2id')
    assert.equal(inspectStoredHash(`$scrypt$ln=20,r=2,p=16$${salt}$${tag}`).algorithm, 'scrypt') // 128·2^20·2 = 256 MiB
    for (const group of [max.argon2, max.bcrypt, max.scrypt]) {
      for (const bound of Object.values(group)) assert.ok(bound.reason.length > 10, 'every bound says why')
    }
  })
})

describe('policy validation', () => {
  it('accepts the default policy, which is frozen', () => {
    validatePolicy(defaultPolicy)
    assert.deepEqual(defaultPolicy, {
      algorithm: 'argon2id',
      argon2: { memoryKiB: 19456, timeCost: 2, parallelism: 1 },
      bcrypt: { cost: 10 },
      scrypt: { N: 32768, r: 8, p: 1 },
    })
    assert.ok(Object.isFrozen(defaultPolicy) && Object.isFrozen(defaultPolicy.argon2))
  })

  it('throws CONFIG_INVALID naming the field at fault', () => {
    const cases: Array<[string, unknown]> = [
      ['policy', null],
      ['policy.algorithm', { ...cheapPolicy, algorithm: 'md5' }],
      ['policy.argon2', { ...cheapPolicy, argon2: undefined }],
      ['policy.argon2.memoryKiB', { ...cheapPolicy, argon2: { ...cheapPolicy.argon2, memoryKiB: 'lots' } }],
      ['policy.argon2.memoryKiB', { ...cheapPolicy, argon2: { ...cheapPolicy.argon2, memoryKiB: 4_194_304 } }],
      ['policy.argon2.timeCost', { ...cheapPolicy, argon2: { ...cheapPolicy.argon2, timeCost: 0 } }],
      ['policy.argon2.parallelism', { ...cheapPolicy, argon2: { ...cheapPolicy.argon2, parallelism: 1.5 } }],
      ['policy.bcrypt.cost', { ...cheapPolicy, bcrypt: { cost: 31 } }],
      ['policy.scrypt.N', { ...cheapPolicy, scrypt: { ...cheapPolicy.scrypt, N: 1000 } }],
      ['policy.scrypt.N', { ...cheapPolicy, scrypt: { N: 2 ** 20, r: 8, p: 1 } }],
      ['policy.scrypt.r', { ...cheapPolicy, scrypt: { ...cheapPolicy.scrypt, r: 64 } }],
    ]
    for (const [field, policy] of cases) {
      const err = thrown(() => { validatePolicy(policy) }, 'CONFIG_INVALID')
      assert.equal(err.field, field, err.message)
      assert.ok(err.message.startsWith(field), err.message)
    }
  })

  it('createPasswordEngine refuses bad options before starting any thread', async () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      ['policy.bcrypt.cost', { policy: { ...cheapPolicy, bcrypt: { cost: 3 } } }],
      ['threadNice', { policy: cheapPolicy, threadNice: 20 }],
      ['threads', { policy: cheapPolicy, threads: 0 }],
      ['threads', { policy: cheapPolicy, threads: 2.5 }],
      ['maxQueue', { policy: cheapPolicy, maxQueue: -1 }],
      ['cpu.cgroupRoot', { policy: cheapPolicy, cpu: { cgroupRoot: '' } }],
    ]
    for (const [field, options] of cases) {
      const err = await rejection(createPasswordEngine(options as unknown as { policy: HashPolicy }), 'CONFIG_INVALID')
      assert.equal(err.field, field, err.message)
    }
  })
})
