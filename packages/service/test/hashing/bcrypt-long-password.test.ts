import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { bcryptHasher } from '../../src/hashing/hashers/bcrypt.js'
import { createPasswordEngine, type PasswordEngine } from '../../src/hashing/index.js'
import { executorFor } from '../../src/harness/strategies/index.js'
import { policyFor, rejection, seedPolicy, thrown } from './fixtures.js'

// bcrypt reads 72 bytes; the library would silently drop the rest.
const exactly72 = '€'.repeat(24) // 3 UTF-8 bytes each
const over72 = exactly72 + 'x'

describe('bcrypt and passwords over 72 bytes', () => {
  let bcrypt: PasswordEngine
  let argon2: PasswordEngine
  before(async () => {
    bcrypt = await createPasswordEngine({ policy: policyFor('bcrypt'), threads: 1 })
    argon2 = await createPasswordEngine({ policy: policyFor('argon2id'), threads: 1 })
  })
  after(async () => { await Promise.all([bcrypt.close(), argon2.close()]) })

  it('hashes exactly 72 UTF-8 bytes', async () => {
    const stored = await bcrypt.hash(exactly72)
    assert.equal((await bcrypt.verify(exactly72, stored)).match, true)
  })

  it('refuses to hash 73 bytes with PASSWORD_TOO_LONG instead of truncating, before queueing', async () => {
    const before = bcrypt.stats()
    await rejection(bcrypt.hash(over72), 'PASSWORD_TOO_LONG')
    assert.equal(bcrypt.stats().completed, before.completed, 'no hash ran')
    // The hasher itself refuses too (defence in depth inside the worker).
    thrown(() => bcryptHasher.hashSync(over72, { cost: 4 }), 'PASSWORD_TOO_LONG')
  })

  it('verifying a longer password against a bcrypt hash of its first 72 bytes is false, under any policy', async () => {
    const stored = await bcrypt.hash(exactly72)
    for (const engine of [bcrypt, argon2]) {
      const before = engine.stats().completed
      assert.deepEqual((await engine.verify(over72, stored)).match, false)
      // It still costs one verify, so the answer's timing is that of any other verify.
      assert.equal(engine.stats().completed, before + 1)
    }
  })

  it('costs a full verify on libuv\'s pool too (the lab\'s libuv strategies), not an instant false', async () => {
    const libuv = await createPasswordEngine({ policy: seedPolicy, threads: 1 }, executorFor('libuv'))
    try {
      const runs: number[] = []
      libuv.onTask((event) => { runs.push(event.runMs) })
      const stored = await libuv.hash(exactly72)
      runs.length = 0
      assert.equal((await libuv.verify(over72, stored)).match, false)
      assert.equal((await libuv.verify('a wrong password', stored)).match, false)
      const [tooLong = 0, wrong = 0] = runs
      // Cost 10 is tens of ms; returning false without the verify took well under one.
      assert.ok(tooLong > 0.3 * wrong, `a too-long password ran ${tooLong.toFixed(1)} ms, a wrong one ${wrong.toFixed(1)} ms`)
    } finally {
      await libuv.close()
    }
  })

  it('other algorithms take long passwords whole', async () => {
    const long = 'p'.repeat(200)
    const stored = await argon2.hash(long)
    assert.equal((await argon2.verify(long, stored)).match, true)
    assert.equal((await argon2.verify(long.slice(0, 199), stored)).match, false)
  })
})
