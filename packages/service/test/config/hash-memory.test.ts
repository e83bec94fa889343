import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { parseHashMemoryBudget } from '../../src/config/hash-memory.js'
import { detectMemoryBudget } from '../../src/hashing/index.js'
import { thrown } from '../hashing/fixtures.js'

const MiB = 1024 * 1024
const GiB = 1024 * MiB

const scratch: string[] = []
after(() => { for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true }) })
function scratchDir (): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-hash-config-'))
  scratch.push(dir)
  return dir
}

describe('TOLLBOOTH_HASH_MEMORY_BUDGET', () => {
  it('takes a share of the memory limit or a size', () => {
    assert.deepEqual(parseHashMemoryBudget('50%'), { percent: 50 })
    assert.deepEqual(parseHashMemoryBudget('12.5 %'), { percent: 12.5 })
    assert.deepEqual(parseHashMemoryBudget('512MiB'), { bytes: 512 * MiB })
    assert.deepEqual(parseHashMemoryBudget('2 GiB'), { bytes: 2 * GiB })
    assert.deepEqual(parseHashMemoryBudget('1073741824'), { bytes: GiB })
    for (const bad of ['0%', '150%', '12 parsecs', '', '-1GiB', 'half']) {
      const err = thrown(() => parseHashMemoryBudget(bad), 'CONFIG_INVALID')
      assert.equal(err.field, 'TOLLBOOTH_HASH_MEMORY_BUDGET')
    }
  })

  it('defaults to half the lowest memory limit, which the config carries in bytes', () => {
    const config = loadConfig({ env: { TOLLBOOTH_DATA_DIR: scratchDir() } })
    assert.equal(config.hashMemoryBudgetBytes, Math.floor(detectMemoryBudget().limitBytes / 2))
    assert.equal(loadConfig({ env: { TOLLBOOTH_DATA_DIR: scratchDir(), TOLLBOOTH_HASH_MEMORY_BUDGET: '768MiB' } }).hashMemoryBudgetBytes, 768 * MiB)
  })

  it('refuses a start whose threads × one hash would not fit, naming the settings that would', () => {
    const env = { TOLLBOOTH_DATA_DIR: scratchDir(), TOLLBOOTH_HASH_THREADS: '4', TOLLBOOTH_ARGON2_MEMORY_KIB: '262144', TOLLBOOTH_HASH_MEMORY_BUDGET: '512MiB' }
    const err = thrown(() => loadConfig({ env }), 'CONFIG_INVALID')
    assert.equal(err.field, 'TOLLBOOTH_HASH_MEMORY_BUDGET')
    assert.equal(err.message, '4 hash threads × 256 MiB argon2id = 1 GiB > the hash memory budget of 512 MiB (TOLLBOOTH_HASH_MEMORY_BUDGET=512 MiB): use at most 2 threads (TOLLBOOTH_HASH_THREADS), or TOLLBOOTH_ARGON2_MEMORY_KIB at most 131072 at 4 threads, or a larger TOLLBOOTH_HASH_MEMORY_BUDGET')
    // Each remedy it names is a start that is accepted.
    assert.equal(loadConfig({ env: { ...env, TOLLBOOTH_HASH_THREADS: '2' } }).hashMemoryBudgetBytes, 512 * MiB)
    assert.equal(loadConfig({ env: { ...env, TOLLBOOTH_ARGON2_MEMORY_KIB: '131072' } }).hashPolicy.argon2.memoryKiB, 131072)
    // The algorithm in use decides: bcrypt holds about 4 KiB a hash.
    assert.equal(loadConfig({ env: { ...env, TOLLBOOTH_HASH_ALGORITHM: 'bcrypt' } }).hashPolicy.algorithm, 'bcrypt')
  })

  it('scrypt: the N that fits at this r', () => {
    const env = { TOLLBOOTH_DATA_DIR: scratchDir(), TOLLBOOTH_HASH_THREADS: '8', TOLLBOOTH_HASH_ALGORITHM: 'scrypt', TOLLBOOTH_SCRYPT_N: '131072', TOLLBOOTH_HASH_MEMORY_BUDGET: '512MiB' }
    const err = thrown(() => loadConfig({ env }), 'CONFIG_INVALID')
    assert.match(err.message, /^8 hash threads × 128 MiB scrypt = 1 GiB > .*: use at most 4 threads \(TOLLBOOTH_HASH_THREADS\), or TOLLBOOTH_SCRYPT_N at most 65536 at 8 threads/)
  })

  it('--workers processes share the budget: each gets its part, and the check counts every thread', () => {
    const base = { TOLLBOOTH_DATA_DIR: scratchDir(), TOLLBOOTH_HASH_THREADS: '4', TOLLBOOTH_ARGON2_MEMORY_KIB: '262144', TOLLBOOTH_HASH_MEMORY_BUDGET: '1GiB' }
    // 2 processes × 2 threads × 256 MiB = 1 GiB: fits, 512 MiB each.
    assert.equal(loadConfig({ env: { ...base, TOLLBOOTH_WORKERS: '2' } }).hashMemoryBudgetBytes, 512 * MiB)
    const err = thrown(() => loadConfig({ env: { ...base, TOLLBOOTH_WORKERS: '2', TOLLBOOTH_HASH_MEMORY_BUDGET: '768MiB' } }), 'CONFIG_INVALID')
    assert.match(err.message, /shared by 2 worker processes \(TOLLBOOTH_WORKERS\): 384 MiB each/)
  })
})
