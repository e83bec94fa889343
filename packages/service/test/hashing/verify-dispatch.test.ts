import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createPasswordEngine, needsRehash, type PasswordEngine } from '../../src/hashing/index.js'
import { cheapPolicy, policyFor } from './fixtures.js'

describe('verify dispatches on the stored hash prefix', () => {
  const engines: Record<'argon2id' | 'bcrypt' | 'scrypt', PasswordEngine | undefined> = { argon2id: undefined, bcrypt: undefined, scrypt: undefined }
  const engine = (algorithm: keyof typeof engines): PasswordEngine => {
    const found = engines[algorithm]
    assert.ok(found !== undefined)
    return found
  }
  before(async () => {
    for (const algorithm of ['argon2id', 'bcrypt', 'scrypt'] as const) {
      engines[algorithm] = await createPasswordEngine({ policy: policyFor(algorithm), threads: 1 })
    }
  })
  after(async () => { await Promise.all(Object.values(engines).map(async (e) => { await e?.close() })) })

  it('a bcrypt hash verifies under an argon2id policy, and asks to be re-hashed', async () => {
    const stored = await engine('bcrypt').hash('correct horse')
    assert.match(stored, /^\$2b\$04\$/)
    assert.deepEqual(await engine('argon2id').verify('correct horse', stored), { match: true, needsRehash: true })
    assert.deepEqual(await engine('argon2id').verify('wrong horse', stored), { match: false, needsRehash: true })
    assert.equal(needsRehash(stored, cheapPolicy), true)
    assert.equal(needsRehash(stored, policyFor('bcrypt')), false)
  })

  it('every algorithm verifies under every policy', async () => {
    for (const made of ['argon2id', 'bcrypt', 'scrypt'] as const) {
      const stored = await engine(made).hash('pässwörd ✓')
      for (const checker of ['argon2id', 'bcrypt', 'scrypt'] as const) {
        const result = await engine(checker).verify('pässwörd ✓', stored)
        assert.deepEqual(result, { match: true, needsRehash: made !== checker }, `${made} hash under a ${checker} policy`)
        assert.equal((await engine(checker).verify('passwörd ✓', stored)).match, false)
      }
    }
  })

  it('needsRehash is true when any parameter differs from the policy', async () => {
    const argon = await engine('argon2id').hash('x')
    assert.equal(needsRehash(argon, cheapPolicy), false)
    assert.equal(needsRehash(argon, { ...cheapPolicy, argon2: { ...cheapPolicy.argon2, memoryKiB: 2048 } }), true)
    assert.equal(needsRehash(argon, { ...cheapPolicy, argon2: { ...cheapPolicy.argon2, timeCost: 2 } }), true)
    assert.equal(needsRehash(argon, { ...cheapPolicy, argon2: { ...cheapPolicy.argon2, parallelism: 2 } }), true)
    assert.equal(needsRehash(argon.replace('$v=19$', '$v=16$'), cheapPolicy), true, 'an old argon2 version')
    const bcrypt = await engine('bcrypt').hash('x')
    assert.equal(needsRehash(bcrypt, { ...policyFor('bcrypt'), bcrypt: { cost: 5 } }), true)
    const scrypt = await engine('scrypt').hash('x')
    assert.equal(needsRehash(scrypt, policyFor('scrypt')), false)
    assert.equal(needsRehash(scrypt, { ...policyFor('scrypt'), scrypt: { N: 2048, r: 8, p: 1 } }), true)
    assert.equal(needsRehash(scrypt, { ...policyFor('scrypt'), scrypt: { N: 1024, r: 4, p: 1 } }), true)
    assert.equal(needsRehash(scrypt, { ...policyFor('scrypt'), scrypt: { N: 1024, r: 8, p: 2 } }), true)
    // A changed policy shows in verify too.
    const stricter = await createPasswordEngine({ policy: { ...cheapPolicy, argon2: { ...cheapPolicy.argon2, timeCost: 2 } }, threads: 1 })
    try {
      assert.deepEqual(await stricter.verify('x', argon), { match: true, needsRehash: true })
      assert.equal((await stricter.verify('x', await stricter.hash('x'))).needsRehash, false)
    } finally {
      await stricter.close()
    }
  })
})
