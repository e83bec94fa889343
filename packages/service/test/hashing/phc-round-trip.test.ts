import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { argon2Hasher } from '../../src/hashing/hashers/argon2.js'
import { bcryptHasher } from '../../src/hashing/hashers/bcrypt.js'
import { hasherFor } from '../../src/hashing/hashers/registry.js'
import { formatArgon2, formatBcrypt, formatScrypt, parseArgon2, parseBcrypt, parseScrypt } from '../../src/hashing/hashers/phc.js'
import { scryptHasher } from '../../src/hashing/hashers/scrypt.js'
import { cheapPolicy, thrown } from './fixtures.js'

// These tests call the cheap synchronous hashers directly: the test process is not the service.
describe('PHC and modular crypt strings', () => {
  it('argon2id: a real hash parses to its parameters and formats back to the same string', () => {
    const stored = argon2Hasher.hashSync('correct horse', cheapPolicy.argon2)
    const parsed = parseArgon2(stored)
    assert.equal(parsed.version, 19)
    assert.deepEqual(parsed.params, { memoryKiB: 1024, timeCost: 1, parallelism: 1 })
    assert.equal(parsed.salt.length, 16)
    assert.equal(parsed.hash.length, 32)
    assert.equal(formatArgon2(parsed), stored)
    assert.equal(argon2Hasher.verifySync('correct horse', formatArgon2(parsed)), true)
  })

  it('scrypt: $scrypt$ln=..,r=..,p=..$salt$hash round-trips and verifies', () => {
    const stored = scryptHasher.hashSync('correct horse', cheapPolicy.scrypt)
    assert.match(stored, /^\$scrypt\$ln=10,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/)
    const parsed = parseScrypt(stored)
    assert.deepEqual(parsed.params, { N: 1024, r: 8, p: 1 })
    assert.equal(formatScrypt(parsed), stored)
    assert.equal(scryptHasher.verifySync('correct horse', stored), true)
    assert.equal(scryptHasher.verifySync('wrong horse', stored), false)
  })

  it('bcrypt: $2b$ with a two-digit cost round-trips; $2a$ and $2y$ parse too', () => {
    const stored = bcryptHasher.hashSync('correct horse', { cost: 4 })
    const parsed = parseBcrypt(stored)
    assert.equal(parsed.variant, '2b')
    assert.deepEqual(parsed.params, { cost: 4 })
    assert.equal(formatBcrypt(parsed), stored)
    for (const variant of ['2a', '2y'] as const) {
      const other = formatBcrypt({ ...parsed, variant })
      assert.equal(parseBcrypt(other).variant, variant)
      assert.equal(hasherFor(other).algorithm, 'bcrypt')
    }
  })

  it('dispatches on the prefix', () => {
    assert.equal(hasherFor('$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA').algorithm, 'argon2id')
    assert.equal(hasherFor('$scrypt$ln=10,r=8,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA').algorithm, 'scrypt')
    assert.equal(hasherFor('$2b$04$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234').algorithm, 'bcrypt')
    // argon2i is verified for imported accounts (foreign.ts); argon2d is no format we verify.
    assert.equal(hasherFor('$argon2i$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaA').algorithm, 'argon2i')
    thrown(() => hasherFor('$argon2d$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaA'), 'HASH_FORMAT_UNKNOWN')
    thrown(() => hasherFor('plaintext'), 'HASH_FORMAT_UNKNOWN')
  })

  it('refuses anything but the one canonical spelling with HASH_FORMAT_UNKNOWN', () => {
    const good = '$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA'
    assert.deepEqual(parseArgon2(good).params, { memoryKiB: 1024, timeCost: 1, parallelism: 1 })
    const bad = [
      '$argon2id$v=19$m=1024,t=1$c2FsdHNhbHQ$aGFzaA', // missing p
      '$argon2id$v=19$m=1024,t=1,p=1,p=1$c2FsdHNhbHQ$aGFzaA', // repeated
      '$argon2id$v=19$m=01024,t=1,p=1$c2FsdHNhbHQ$aGFzaA', // leading zero
      '$argon2id$v=19$m=-1,t=1,p=1$c2FsdHNhbHQ$aGFzaA', // sign
      '$argon2id$v=19$m=1024,t=1,p=1,keyid=x$c2FsdHNhbHQ$aGFzaA', // unexpected parameter
      '$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ=$aGFzaA', // padding
      '$argon2id$v=19$m=1024,t=1,p=1$c2F*dHNhbHQ$aGFzaA', // alphabet
      '$argon2id$v=20$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaA', // no such version
      '$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ', // no hash
      '$argon2id$v=19$m=99999999999,t=1,p=1$c2FsdHNhbHQ$aGFzaA', // 11 digits
    ]
    for (const stored of bad) thrown(() => parseArgon2(stored), 'HASH_FORMAT_UNKNOWN')
    thrown(() => parseScrypt('$scrypt$N=1024,r=8,p=1$c2FsdHNhbHQ$aGFzaA'), 'HASH_FORMAT_UNKNOWN')
    thrown(() => parseBcrypt('$2x$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234'), 'HASH_FORMAT_UNKNOWN')
    thrown(() => parseBcrypt('$2b$4$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234'), 'HASH_FORMAT_UNKNOWN')
  })

  it('never puts the stored hash in an error message (it would reach the logs)', () => {
    const secretish = '$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$SECRETSECRET='
    const err = thrown(() => parseArgon2(secretish), 'HASH_FORMAT_UNKNOWN')
    assert.ok(!err.message.includes('SECRETSECRET'), err.message)
  })
})
