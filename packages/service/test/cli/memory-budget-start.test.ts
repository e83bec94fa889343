import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { scratchClusterDir } from '../../src/db/embedded/embedded.js'
import { packageRoot } from '../../src/paths.js'

const bin = path.join(packageRoot, 'bin', 'tollbooth.js')
const dataDir = path.dirname(scratchClusterDir('cli-memory'))
after(() => { fs.rmSync(dataDir, { recursive: true, force: true }) })

function serve (settings: NodeJS.ProcessEnv): ReturnType<typeof spawnSync> & { stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, TOLLBOOTH_DATA_DIR: dataDir, PORT: '0', ...settings }
  delete env.DATABASE_URL
  return spawnSync(process.execPath, [bin, 'serve'], { encoding: 'utf8', env, timeout: 60_000 })
}

describe('`tollbooth serve` whose hash threads would not fit the memory budget', () => {
  it('is refused before anything starts, with what fits', () => {
    const result = serve({ TOLLBOOTH_HASH_THREADS: '4', TOLLBOOTH_ARGON2_MEMORY_KIB: '262144', TOLLBOOTH_HASH_MEMORY_BUDGET: '512MiB' })
    assert.equal(result.status, 2, result.stderr)
    assert.match(result.stderr, /invalid configuration: 4 hash threads × 256 MiB argon2id = 1 GiB > the hash memory budget of 512 MiB \(TOLLBOOTH_HASH_MEMORY_BUDGET=512 MiB\): use at most 2 threads \(TOLLBOOTH_HASH_THREADS\), or TOLLBOOTH_ARGON2_MEMORY_KIB at most 131072 at 4 threads, or a larger TOLLBOOTH_HASH_MEMORY_BUDGET/)
    assert.ok(!fs.existsSync(path.join(dataDir, 'pg')), 'no database cluster was created')
  })

  it('with --workers: every process\'s threads count against the one budget', () => {
    const result = serve({ TOLLBOOTH_HASH_THREADS: '4', TOLLBOOTH_WORKERS: '4', TOLLBOOTH_HASH_ALGORITHM: 'scrypt', TOLLBOOTH_SCRYPT_N: '131072', TOLLBOOTH_HASH_MEMORY_BUDGET: '256MiB' })
    assert.equal(result.status, 2, result.stderr)
    assert.match(result.stderr, /1 hash thread × 128 MiB scrypt = 128 MiB > the hash memory budget of 256 MiB \(TOLLBOOTH_HASH_MEMORY_BUDGET=256 MiB, shared by 4 worker processes \(TOLLBOOTH_WORKERS\): 64 MiB each\): not even one thread fits; TOLLBOOTH_SCRYPT_N at most 65536 at 1 thread/)
    assert.ok(!fs.existsSync(path.join(dataDir, 'pg')), 'no database cluster was created')
  })
})
