/**
 * glibc's malloc settings for the hash threads' memory (src/machine/malloc-env.ts): with them a
 * scrypt hash in a worker thread reuses its buffer instead of faulting 32 MiB in afresh each
 * time; they are added only where glibc takes them. Counted in page faults, not timed.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { glibcTakesHashMallocEnv, hashMallocEnv, hashMallocState, missingHashMallocEnv, runtimeGlibcVersion, withHashMallocEnv } from '../../src/machine/malloc-env.js'
import { packageRoot } from '../../src/paths.js'

const execFileAsync = promisify(execFile)

/** better-auth's scrypt setting (32 MiB a hash), five times in a worker thread; prints the minor page faults per hash after the first. */
const faultsPerHashCode = `
const { Worker } = require('node:worker_threads')
const worker = new Worker(\`
  const { parentPort } = require('node:worker_threads')
  const { scryptSync } = require('node:crypto')
  const minorFaults = () => Number(require('node:fs').readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[7])
  const hash = () => scryptSync('correct horse', 'battery staple', 32, { N: 16384, r: 16, p: 1, maxmem: 64 * 1024 * 1024 })
  hash()
  const before = minorFaults()
  for (let i = 0; i < 4; i++) hash()
  parentPort.postMessage((minorFaults() - before) / 4)
\`, { eval: true })
worker.on('message', (faults) => { console.log(faults) })
`

async function faultsPerHash (env: NodeJS.ProcessEnv): Promise<number> {
  const { stdout } = await execFileAsync(process.execPath, ['-e', faultsPerHashCode], { env })
  return Number(stdout.trim())
}

function withoutMallocSettings (): NodeJS.ProcessEnv {
  const env = { ...process.env }
  for (const name of Object.keys(hashMallocEnv)) Reflect.deleteProperty(env, name)
  return env
}

describe('glibc malloc settings for the hash threads', () => {
  it('adds the settings a caller did not set and keeps those it did, on a glibc that takes them', () => {
    assert.deepEqual(withHashMallocEnv({ PORT: '1' }, '2.36'), { PORT: '1', ...hashMallocEnv })
    assert.deepEqual(withHashMallocEnv({ MALLOC_MMAP_THRESHOLD_: '65536' }, '2.35'), { MALLOC_MMAP_THRESHOLD_: '65536', MALLOC_TRIM_THRESHOLD_: hashMallocEnv.MALLOC_TRIM_THRESHOLD_ })
    assert.deepEqual(missingHashMallocEnv({ ...hashMallocEnv }, '2.36'), {})
    // glibc 2.34 refuses a threshold above 32 MiB, and the trim threshold alone would do harm; other C libraries ignore both.
    assert.deepEqual(withHashMallocEnv({ PORT: '1' }, '2.34'), { PORT: '1' })
    assert.deepEqual(withHashMallocEnv({ PORT: '1' }, '2.28'), { PORT: '1' })
    assert.deepEqual(missingHashMallocEnv({}, null), {}, 'musl, macOS')
    assert.equal(glibcTakesHashMallocEnv('3.0'), true)
    assert.equal(hashMallocState({ ...hashMallocEnv }, '2.36'), 'set')
    assert.equal(hashMallocState({ MALLOC_MMAP_THRESHOLD_: '65536' }, '2.36'), 'missing')
    assert.equal(hashMallocState({}, '2.34'), 'not applicable')
    assert.equal(hashMallocState({}, null), 'not applicable')
  })

  const glibc = runtimeGlibcVersion()
  it('with them a scrypt hash reuses its buffer instead of faulting 32 MiB in afresh each time', { skip: !glibcTakesHashMallocEnv(glibc) && `glibc ${glibc ?? 'absent'}: the settings are not added here` }, async (t) => {
    const untuned = await faultsPerHash(withoutMallocSettings())
    const tuned = await faultsPerHash({ ...withoutMallocSettings(), ...hashMallocEnv })
    if (untuned < 1000) {
      // Transparent huge pages on every mapping: the buffer does not cost 8,192 faults here.
      t.skip(`${untuned} page faults a hash without the settings: nothing for them to save on this machine`)
      return
    }
    assert.ok(tuned < untuned / 10, `with them a hash faults in almost nothing: ${tuned} against ${untuned} without (8,194 pages on the development machine)`)
  })

  it('the Dockerfile sets the same values', () => {
    const repoRoot = path.resolve(packageRoot, '..', '..')
    const dockerfile = fs.readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8')
    for (const [name, value] of Object.entries(hashMallocEnv)) assert.match(dockerfile, new RegExp(`^\\s+${name}=${value}( \\\\)?$`, 'm'), `the Dockerfile's ENV sets ${name}=${value}`)
  })
})
