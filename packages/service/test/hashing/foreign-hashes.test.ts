/**
 * Other systems' hashes (hashing/hashers/foreign.ts): verified on the pool's worker threads and
 * always re-hashed after a good login; bounded before any work, as our own are; Firebase's scrypt
 * variant against Firebase's published test vector.
 */
import assert from 'node:assert/strict'
import { pbkdf2Sync } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { createPasswordEngine, formatPbkdf2, formatFirebaseScrypt, hashLimits, inspectStoredHash, noPasswordHash, type PasswordEngine } from '../../src/hashing/index.js'
import { argon2iLimits, firebaseScryptHashSync, firebaseScryptLimits, pbkdf2Limits } from '../../src/hashing/hashers/index.js'
import { cheapPolicy, rejection, thrown } from './fixtures.js'

/** https://github.com/firebase/scrypt (README): a project's parameters, an exported user's salt and hash, and its password. */
const firebaseVector = {
  params: {
    signerKey: Buffer.from('jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==', 'base64'),
    saltSeparator: Buffer.from('Bw==', 'base64'),
    rounds: 8,
    memCost: 14,
  },
  salt: Buffer.from('42xEC+ixf3L2lw==', 'base64'),
  hash: Buffer.from('lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==', 'base64'),
  password: 'user1password',
}
const firebaseStored = formatFirebaseScrypt(firebaseVector)

function pbkdf2Stored (password: string, iterations: number, digest: 'sha256' | 'sha512' = 'sha256', bytes = 32): string {
  const salt = Buffer.from('a salt of sixteen')
  return formatPbkdf2({ digest, iterations, salt, hash: pbkdf2Sync(password, salt, iterations, bytes, digest) })
}

describe('foreign hashes', () => {
  let engine: PasswordEngine
  before(async () => { engine = await createPasswordEngine({ policy: cheapPolicy, threads: 1 }) })
  after(async () => { await engine.close() })

  it('Firebase\'s scrypt variant gives Firebase\'s published hash', () => {
    assert.deepEqual(firebaseScryptHashSync(firebaseVector.password, firebaseVector.salt, firebaseVector.params), firebaseVector.hash)
  })

  it('each verifies on the pool\'s threads, matches only its password, and asks to be re-hashed', async () => {
    for (const [stored, password] of [[firebaseStored, firebaseVector.password], [pbkdf2Stored('pbkdf2 pw', 1000), 'pbkdf2 pw'], [pbkdf2Stored('sha512 pw', 1000, 'sha512', 64), 'sha512 pw']] as const) {
      const completed = engine.stats().completed
      assert.deepEqual(await engine.verify(password, stored), { match: true, needsRehash: true })
      assert.deepEqual(await engine.verify(`${password}x`, stored), { match: false, needsRehash: true })
      assert.equal(engine.stats().completed, completed + 2, 'both verifies ran on the pool')
    }
  })

  it('an account without a password matches nothing, on a thread like any verify', async () => {
    const completed = engine.stats().completed
    assert.deepEqual(await engine.verify('', noPasswordHash), { match: false, needsRehash: true })
    assert.deepEqual(await engine.verify('!', noPasswordHash), { match: false, needsRehash: true })
    assert.equal(engine.stats().completed, completed + 2)
    thrown(() => inspectStoredHash('!something'), 'HASH_FORMAT_UNKNOWN')
  })

  it('refuses out-of-bound parameters before any work', async () => {
    const overBound = [
      pbkdf2Stored('x', 1000).replace('i=1000,', `i=${pbkdf2Limits.work.sha256.max + 1},`),
      // 64 bytes of SHA-256 are two blocks: half the iterations reach the bound.
      pbkdf2Stored('x', 1000, 'sha256', 64).replace('i=1000,', `i=${pbkdf2Limits.work.sha256.max / 2 + 1},`),
      pbkdf2Stored('x', 1000, 'sha512', 64).replace('i=1000,', `i=${pbkdf2Limits.work.sha512.max + 1},`),
      firebaseStored.replace('ln=14,', `ln=${firebaseScryptLimits.memCost.max + 1},`),
      firebaseStored.replace(',r=8$', `,r=${firebaseScryptLimits.rounds.max + 1}$`),
      '$argon2i$v=19$m=4194304,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g',
      '$argon2i$v=19$m=2048,t=17,p=1$c29tZXNhbHRzb21lc2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g',
    ]
    for (const stored of overBound) {
      thrown(() => inspectStoredHash(stored), 'HASH_PARAMS_OUT_OF_BOUNDS')
      const completed = engine.stats().completed
      await rejection(engine.verify('x', stored), 'HASH_PARAMS_OUT_OF_BOUNDS')
      assert.equal(engine.stats().completed, completed, 'nothing ran')
    }
  })

  it('reads one canonical spelling: anything else is an unknown format', () => {
    const canonical = pbkdf2Stored('x', 1000)
    inspectStoredHash(canonical)
    for (const variant of [
      canonical.replace('i=1000,l=32', 'l=32,i=1000'),
      canonical.replace('i=1000,', 'i=01000,'),
      canonical.replace(',l=32', ',l=31'),
      `${canonical}=`,
      canonical.replace('$pbkdf2-sha256$', '$pbkdf2-sha1$'),
      firebaseStored.split('$').slice(0, -1).join('$'),
    ]) thrown(() => inspectStoredHash(variant), 'HASH_FORMAT_UNKNOWN')
  })

  it('argon2i is bounded by the same numbers as argon2id', () => {
    assert.deepEqual(argon2iLimits, hashLimits.argon2)
  })
})
