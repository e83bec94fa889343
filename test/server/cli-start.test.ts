import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { scratchClusterDir } from '../../src/db/embedded.js'
import { packageRoot } from '../../src/paths.js'
import { request } from '../helpers/service.js'

const bin = path.join(packageRoot, 'bin', 'tollbooth.js')

interface Started { child: ChildProcess, url: string, pgPort: number, output: () => string }

/** Starts `tollbooth` as `npm start` does, and waits for its "listening" log line. */
async function startCli (dataDir: string): Promise<Started> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TOLLBOOTH_DATA_DIR: dataDir,
    PORT: '0',
    TOLLBOOTH_LOG_LEVEL: 'info',
    TOLLBOOTH_ARGON2_MEMORY_KIB: '1024',
    TOLLBOOTH_ARGON2_TIME_COST: '1',
  }
  delete env.DATABASE_URL
  const child = spawn(process.execPath, [bin], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const deadline = Date.now() + 60_000
  let pgPort = 0
  for (;;) {
    const listening = output.split('\n').map((line) => { try { return JSON.parse(line) as Record<string, unknown> } catch { return {} } })
    const ready = listening.find((line) => line.msg === 'tollbooth is listening')
    const pg = listening.find((line) => line.msg === 'embedded PostgreSQL started')
    if (pg !== undefined) pgPort = Number(pg.port)
    if (ready !== undefined) return { child, url: String(ready.url), pgPort, output: () => output }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`tollbooth did not start:\n${output}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

async function stop (started: Started): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => started.child.once('exit', (code) => { resolve(code) }))
  started.child.kill('SIGTERM')
  return await exited
}

async function portIsClosed (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => { resolve(true) })
  })
}

describe('`tollbooth` with no DATABASE_URL (what `npm start` runs)', () => {
  const dataDir = path.dirname(scratchClusterDir('cli'))
  after(() => { fs.rmSync(dataDir, { recursive: true, force: true }) })

  it('starts an embedded PostgreSQL, serves the API, stops cleanly on SIGTERM and keeps the data for the next start', async () => {
    const first = await startCli(dataDir)
    assert.ok(first.pgPort > 0)
    const account = { email: 'persisted@example.com', password: 'persisted password' }
    const registered = await request({ url: first.url }, 'POST', '/api/v1/auth/register', { body: account })
    assert.equal(registered.status, 201, JSON.stringify(registered.body))
    assert.match(first.output(), /"cpuBudget":\{"cpus":\d+/)
    assert.ok(!first.output().includes(account.password), 'the password is never logged')
    assert.ok(!first.output().includes(registered.body.refreshToken), 'tokens are never logged')
    assert.equal(await stop(first), 0)
    assert.ok(await portIsClosed(first.pgPort), 'the embedded PostgreSQL stopped with the service')
    assert.ok(fs.existsSync(path.join(dataDir, 'pg', 'PG_VERSION')))
    const secret = fs.readFileSync(path.join(dataDir, 'jwt-secret'), 'utf8')

    const second = await startCli(dataDir)
    try {
      const login = await request({ url: second.url }, 'POST', '/api/v1/auth/login', { body: account })
      assert.equal(login.status, 200)
      // The access token from the first run still verifies: the key was kept.
      const me = await request({ url: second.url }, 'GET', '/api/v1/me', { token: registered.body.accessToken })
      assert.equal(me.status, 200)
      assert.equal(fs.readFileSync(path.join(dataDir, 'jwt-secret'), 'utf8'), secret)
    } finally {
      assert.equal(await stop(second), 0)
    }
  })

  it('refuses invalid configuration with a clear message and exit code 2', () => {
    const result = spawnSync(process.execPath, [bin, '--port', 'eighty'], { encoding: 'utf8', env: { ...process.env, TOLLBOOTH_HASH_ALGORITHM: 'md5' } })
    assert.equal(result.status, 2)
    assert.match(result.stderr, /invalid configuration: flag \(PORT \/ --port\) must be a whole number, got "eighty"/)
    const env = spawnSync(process.execPath, [bin], { encoding: 'utf8', env: { ...process.env, TOLLBOOTH_HASH_ALGORITHM: 'md5' } })
    assert.equal(env.status, 2)
    assert.match(env.stderr, /TOLLBOOTH_HASH_ALGORITHM .*must be one of argon2id, bcrypt, scrypt, got "md5"/)
  })

  it('prints every setting in --help', () => {
    const result = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8' })
    assert.equal(result.status, 0)
    for (const name of ['PORT', 'HOST', 'DATABASE_URL', 'TOLLBOOTH_DATA_DIR', 'TOLLBOOTH_HASH_ALGORITHM', 'TOLLBOOTH_BCRYPT_COST', 'TOLLBOOTH_ARGON2_MEMORY_KIB', 'TOLLBOOTH_ARGON2_TIME_COST', 'TOLLBOOTH_ARGON2_PARALLELISM', 'TOLLBOOTH_SCRYPT_N', 'TOLLBOOTH_SCRYPT_R', 'TOLLBOOTH_SCRYPT_P', 'TOLLBOOTH_HASH_THREADS', 'TOLLBOOTH_LOGIN_DEADLINE_MS']) {
      assert.ok(result.stdout.includes(name), `--help mentions ${name}`)
    }
  })
})
