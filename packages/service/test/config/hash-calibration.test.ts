import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { thrown } from '../hashing/fixtures.js'

const scratch: string[] = []
after(() => { for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true }) })

/** A data folder holding `hash-calibration.json` with `content` (an object is written as JSON). */
function dataDirWith (content: unknown): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-calibration-'))
  scratch.push(dir)
  fs.writeFileSync(path.join(dir, 'hash-calibration.json'), typeof content === 'string' ? content : JSON.stringify(content))
  return dir
}

describe('the calibration file in the data folder (tollbooth calibrate --write)', () => {
  const calibrated = { settings: { TOLLBOOTH_HASH_ALGORITHM: 'argon2id', TOLLBOOTH_ARGON2_MEMORY_KIB: '24576', TOLLBOOTH_ARGON2_TIME_COST: '3', TOLLBOOTH_ARGON2_PARALLELISM: '1' }, measured: { allThreadsMs: 250 } }

  it('gives the hash defaults, and says which file it is', () => {
    const dir = dataDirWith(calibrated)
    const config = loadConfig({ env: { TOLLBOOTH_DATA_DIR: dir } })
    assert.deepEqual(config.hashPolicy.argon2, { memoryKiB: 24576, timeCost: 3, parallelism: 1 })
    assert.equal(config.hashCalibrationFile, path.join(dir, 'hash-calibration.json'))
    assert.equal(loadConfig({ env: { TOLLBOOTH_DATA_DIR: path.join(dir, 'elsewhere') } }).hashCalibrationFile, undefined)
  })

  it('is below every variable and flag, setting by setting', () => {
    const dir = dataDirWith(calibrated)
    const fromEnv = loadConfig({ env: { TOLLBOOTH_DATA_DIR: dir, TOLLBOOTH_ARGON2_TIME_COST: '2' } })
    assert.deepEqual(fromEnv.hashPolicy.argon2, { memoryKiB: 24576, timeCost: 2, parallelism: 1 })
    const fromFlag = loadConfig({ env: { TOLLBOOTH_DATA_DIR: dir, TOLLBOOTH_ARGON2_MEMORY_KIB: '8192' }, argv: ['--argon2-memory-kib', '4096', '--hash-algorithm', 'bcrypt'] })
    assert.equal(fromFlag.hashPolicy.algorithm, 'bcrypt')
    assert.deepEqual(fromFlag.hashPolicy.argon2, { memoryKiB: 4096, timeCost: 3, parallelism: 1 })
  })

  it('is checked like the environment: out-of-range values and anything else are refused, naming the file', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ settings: { TOLLBOOTH_ARGON2_TIME_COST: '99' } }, /hash-calibration\.json \(TOLLBOOTH_ARGON2_TIME_COST \/ --argon2-time-cost\) must be between 1 and 16, got 99/],
      [{ settings: { DATABASE_URL: 'postgres://elsewhere/db' } }, /holds DATABASE_URL, which is not a hash setting/],
      [{ settings: { TOLLBOOTH_BCRYPT_COST: 12 } }, /holds TOLLBOOTH_BCRYPT_COST as number, not text/],
      [{ nothing: true }, /has no "settings" object/],
      ['{ not json', /is not JSON/],
    ]
    for (const [content, message] of cases) {
      const err = thrown(() => loadConfig({ env: { TOLLBOOTH_DATA_DIR: dataDirWith(content) } }), 'CONFIG_INVALID')
      assert.match(err.message, message)
    }
  })
})
