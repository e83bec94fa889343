import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { scratchClusterDir } from '../../src/db/embedded/embedded.js'
import { packageRoot } from '../../src/paths.js'
import { startCli, stopCli } from '../helpers/cli.js'
import { testAccountEnv } from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

const bin = path.join(packageRoot, 'bin', 'tollbooth.js')
const dataDir = path.dirname(scratchClusterDir('cli-calibrate'))
after(() => { fs.rmSync(dataDir, { recursive: true, force: true }) })

function calibrateCli (args: string[], settings: NodeJS.ProcessEnv = {}): ReturnType<typeof spawnSync> & { stdout: string, stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, ...settings }
  delete env.TOLLBOOTH_HASH_THREADS
  delete env.TOLLBOOTH_HASH_MEMORY_BUDGET
  return spawnSync(process.execPath, [bin, 'calibrate', ...args], { encoding: 'utf8', env, timeout: 120_000 })
}

describe('`tollbooth calibrate`', () => {
  it('refuses bad arguments and a budget that cannot hold OWASP\'s minimum, with exit code 2', () => {
    const bad = calibrateCli(['--algorithm', 'md5'])
    assert.equal(bad.status, 2)
    assert.match(bad.stderr, /--algorithm must be one of argon2id, bcrypt, scrypt, got "md5"/)
    const small = calibrateCli(['--algorithm', 'scrypt', '--threads', '4', '--memory', '256MiB'])
    assert.equal(small.status, 2)
    assert.match(small.stderr, /the hash memory budget of 256 MiB \(--memory=256 MiB\) gives each of 4 hash threads 64 MiB, less than OWASP's least scrypt memory \(N=131072 r=8: 128 MiB\): use at most 2 threads \(--threads\), or a budget of at least 512 MiB \(--memory\)/)
  })

  it('--write keeps the result where `tollbooth serve` reads it as its defaults; the environment still wins', async () => {
    // A target below bcrypt cost 10 on any machine: one search step, then the minimum, said so.
    const result = calibrateCli(['--algorithm', 'bcrypt', '--target-ms', '1', '--threads', '1', '--write', '--json'], { TOLLBOOTH_DATA_DIR: dataDir })
    assert.equal(result.status, 0, result.stderr)
    const output = JSON.parse(result.stdout) as { outcome: string, settings: Record<string, string>, written: string, final: { medianMs: number, verifies: number } }
    assert.equal(output.outcome, 'minimum-too-slow')
    assert.deepEqual(output.settings, { TOLLBOOTH_HASH_ALGORITHM: 'bcrypt', TOLLBOOTH_BCRYPT_COST: '10' })
    assert.equal(output.written, path.join(dataDir, 'hash-calibration.json'))
    assert.ok(output.final.verifies >= 10 && output.final.medianMs > 1, JSON.stringify(output.final))

    const env: NodeJS.ProcessEnv = { ...process.env, TOLLBOOTH_DATA_DIR: dataDir, PORT: '0', TOLLBOOTH_LOG_LEVEL: 'info', TOLLBOOTH_SHUTDOWN_DRAIN_MS: '0', TOLLBOOTH_ARGON2_MEMORY_KIB: '1024', TOLLBOOTH_ARGON2_TIME_COST: '1', ...testAccountEnv }
    for (const name of ['DATABASE_URL', 'TOLLBOOTH_HASH_ALGORITHM', 'TOLLBOOTH_BCRYPT_COST']) delete env[name]
    // The calibrated cost with the calibrated algorithm; then the environment's cost over the file's.
    for (const [settings, cost] of [[{}, 10], [{ TOLLBOOTH_BCRYPT_COST: '4' }, 4]] as const) {
      const readyFile = path.join(dataDir, 'ready.json')
      const started = await startCli({ ...env, ...settings }, ['serve', '--ready-file', readyFile])
      try {
        // Written once the signal handlers are in place: a SIGTERM before them would end the process unanswered.
        await waitFor('the ready file', () => fs.existsSync(readyFile))
        const pool = started.lines().find((line) => typeof line.msg === 'string' && line.msg.startsWith('hash pool:'))
        assert.equal(pool?.algorithm, 'bcrypt', started.output())
        assert.deepEqual(pool?.params, { cost })
        assert.equal(pool?.calibration, output.written)
      } finally {
        assert.equal(await stopCli(started), 0)
      }
    }
  })
})
