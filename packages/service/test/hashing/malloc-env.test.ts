/**
 * glibc's malloc settings for the hash threads' memory (src/hashing/malloc-env.ts): with them a
 * scrypt hash in a worker thread reuses its buffer instead of faulting 32 MiB in afresh each
 * time; everything that starts the service sets them. Counted in page faults, not timed.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { hashMallocEnv, missingHashMallocEnv, withHashMallocEnv } from '../../src/hashing/malloc-env.js'
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
  it('adds the settings a caller did not set and keeps those it did', () => {
    assert.deepEqual(withHashMallocEnv({ PORT: '1' }), { PORT: '1', ...hashMallocEnv })
    assert.deepEqual(withHashMallocEnv({ MALLOC_MMAP_THRESHOLD_: '65536' }), { MALLOC_MMAP_THRESHOLD_: '65536', MALLOC_TRIM_THRESHOLD_: hashMallocEnv.MALLOC_TRIM_THRESHOLD_ })
    assert.deepEqual(missingHashMallocEnv({ ...hashMallocEnv }), {})
  })

  it('with them a scrypt hash reuses its buffer instead of faulting 32 MiB in afresh each time', { skip: process.platform !== 'linux' && 'page faults are read from /proc' }, async (t) => {
    const untuned = await faultsPerHash(withoutMallocSettings())
    const tuned = await faultsPerHash(withHashMallocEnv(withoutMallocSettings()))
    if (untuned < 1000) {
      // A C library other than glibc, or transparent huge pages on every mapping: the buffer does not cost 8,192 faults here.
      t.skip(`${untuned} page faults a hash without the settings: nothing for them to save on this machine`)
      return
    }
    assert.ok(untuned > 4000, `without them each hash faults in most of its 32 MiB (8,192 pages): ${untuned}`)
    assert.ok(tuned < untuned / 10, `with them a hash faults in almost nothing: ${tuned} against ${untuned}`)
  })

  it('npm start, the Dockerfile and the all-core hashing bench set them, as the launchers do', () => {
    const repoRoot = path.resolve(packageRoot, '..', '..')
    const settings = Object.entries(hashMallocEnv).map(([name, value]) => `${name}=${value}`)
    const scripts = (file: string): Record<string, string> => (JSON.parse(fs.readFileSync(file, 'utf8')) as { scripts: Record<string, string> }).scripts
    const root = scripts(path.join(repoRoot, 'package.json'))
    const commands = { 'npm start': root.start, 'npm run bench:hash': root['bench:hash'], 'the service package\'s npm start': scripts(path.join(packageRoot, 'package.json')).start }
    for (const [name, command] of Object.entries(commands)) {
      for (const setting of settings) assert.ok(command?.includes(`${setting} `), `${name} sets ${setting}: ${command}`)
    }
    const dockerfile = fs.readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8')
    for (const setting of settings) assert.match(dockerfile, new RegExp(`^\\s+${setting}( \\\\)?$`, 'm'), `the Dockerfile's ENV sets ${setting}`)
  })
})
