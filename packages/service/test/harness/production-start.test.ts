/**
 * The harness stays out of production: `tollbooth serve` loads none of it (read from the modules
 * the process really resolved), and the harness's own choices are refused where they must be.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { packageRoot } from '../../src/paths.js'
import { harnessEntry, startCli, stopCli } from '../helpers/cli.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { request, serveEnv } from '../helpers/service.js'

const harnessDir = pathToFileURL(path.join(packageRoot, 'dist', 'src', 'harness')).href + '/'
const authenticatorDir = pathToFileURL(path.join(packageRoot, 'dist', 'src', 'software-authenticator')).href + '/'
const recordModules = pathToFileURL(path.join(packageRoot, 'dist', 'test', 'helpers', 'record-modules.js')).href

describe('tollbooth serve and the lab\'s harness', () => {
  let db: TestDatabase
  let logDir: string
  before(async () => {
    db = await createTestDatabase()
    logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-modules-'))
  })
  after(async () => {
    await db.drop()
    fs.rmSync(logDir, { recursive: true, force: true })
  })

  it('serve loads no module of the harness (no seed strategy, no diagnostic route) nor the software authenticator, and answers a login', async () => {
    const log = path.join(logDir, 'serve.txt')
    const env = { ...serveEnv(db.url), NODE_OPTIONS: `--import=${recordModules}`, TOLLBOOTH_MODULE_LOG: log }
    const started = await startCli(env, ['serve'])
    try {
      const account = { email: 'production@example.com', password: 'production password' }
      assert.equal((await request(started, 'POST', '/api/v1/auth/register', { body: account })).status, 201)
      assert.equal((await request(started, 'POST', '/api/v1/auth/login', { body: account })).status, 200)
      assert.equal((await request(started, 'POST', '/api/v1/lab/login?hash=noop', { body: account })).status, 404, 'no diagnostic route')
    } finally {
      assert.equal(await stopCli(started), 0)
    }
    const loaded = fs.readFileSync(log, 'utf8').split('\n').filter((line) => line !== '')
    assert.ok(loaded.some((url) => url.endsWith('/dist/src/hashing/engine.js')), 'the record holds the service\'s own modules')
    assert.deepEqual(loaded.filter((url) => url.startsWith(harnessDir)), [], 'none of the harness')
    assert.deepEqual(loaded.filter((url) => url.startsWith(authenticatorDir)), [], 'nor the software authenticator')
  })

  it('the harness refuses its diagnostic routes on an address other machines reach', async () => {
    const child = spawn(process.execPath, [harnessEntry, '--lab-diagnostics'], { env: { ...serveEnv(db.url), HOST: '0.0.0.0' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    const code = await new Promise((resolve) => child.once('exit', resolve))
    assert.equal(code, 2)
    assert.match(stderr, /--lab-diagnostics needs the service on a loopback address/)
  })

  it('the harness refuses a strategy it does not know', async () => {
    const child = spawn(process.execPath, [harnessEntry, '--hash-strategy', 'fast'], { env: serveEnv(db.url), stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    assert.equal(await new Promise((resolve) => child.once('exit', resolve)), 2)
    assert.match(stderr, /--hash-strategy must be one of tollbooth, event-loop/)
  })
})
