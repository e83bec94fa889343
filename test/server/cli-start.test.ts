import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { scratchClusterDir } from '../../src/db/embedded.js'
import { packageRoot } from '../../src/paths.js'
import { startCli, stopCli, type StartedCli } from '../helpers/cli.js'
import { request } from '../helpers/service.js'

const bin = path.join(packageRoot, 'bin', 'tollbooth.js')

async function startEmbeddedCli (dataDir: string): Promise<StartedCli & { pgPort: number }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TOLLBOOTH_DATA_DIR: dataDir,
    PORT: '0',
    TOLLBOOTH_LOG_LEVEL: 'info',
    TOLLBOOTH_ARGON2_MEMORY_KIB: '1024',
    TOLLBOOTH_ARGON2_TIME_COST: '1',
  }
  delete env.DATABASE_URL
  const started = await startCli(env)
  const pg = started.lines().find((line) => line.msg === 'embedded PostgreSQL started')
  return { ...started, pgPort: Number(pg?.port ?? 0) }
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
    const first = await startEmbeddedCli(dataDir)
    assert.ok(first.pgPort > 0)
    const account = { email: 'persisted@example.com', password: 'persisted password' }
    const registered = await request({ url: first.url }, 'POST', '/api/v1/auth/register', { body: account })
    assert.equal(registered.status, 201, JSON.stringify(registered.body))
    assert.match(first.output(), /"cpuBudget":\{"cpus":\d+/)
    assert.ok(!first.output().includes(account.password), 'the password is never logged')
    assert.ok(!first.output().includes(registered.body.refreshToken), 'tokens are never logged')
    assert.equal(await stopCli(first), 0)
    assert.ok(await portIsClosed(first.pgPort), 'the embedded PostgreSQL stopped with the service')
    assert.ok(fs.existsSync(path.join(dataDir, 'pg', 'PG_VERSION')))
    const secret = fs.readFileSync(path.join(dataDir, 'jwt-secret'), 'utf8')

    const second = await startEmbeddedCli(dataDir)
    try {
      const login = await request({ url: second.url }, 'POST', '/api/v1/auth/login', { body: account })
      assert.equal(login.status, 200)
      // The access token from the first run still verifies: the key was kept.
      const me = await request({ url: second.url }, 'GET', '/api/v1/me', { token: registered.body.accessToken })
      assert.equal(me.status, 200)
      assert.equal(fs.readFileSync(path.join(dataDir, 'jwt-secret'), 'utf8'), secret)
    } finally {
      assert.equal(await stopCli(second), 0)
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

  it('refuses an impossible hash policy at start, before PostgreSQL starts', () => {
    const emptyDir = path.dirname(scratchClusterDir('cli-policy'))
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, TOLLBOOTH_DATA_DIR: emptyDir, TOLLBOOTH_SCRYPT_N: '1048576' }
      delete env.DATABASE_URL
      const result = spawnSync(process.execPath, [bin], { encoding: 'utf8', env })
      assert.equal(result.status, 2, result.stderr)
      assert.match(result.stderr, /invalid configuration: TOLLBOOTH_SCRYPT_N \/ --scrypt-n is 1048576/)
      assert.ok(!fs.existsSync(path.join(emptyDir, 'pg')), 'no database cluster was created')
    } finally {
      fs.rmSync(emptyDir, { recursive: true, force: true })
    }
  })

  it('prints every setting in --help', () => {
    const result = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8' })
    assert.equal(result.status, 0)
    for (const name of ['PORT', 'HOST', 'DATABASE_URL', 'TOLLBOOTH_DATA_DIR', 'TOLLBOOTH_HASH_ALGORITHM', 'TOLLBOOTH_BCRYPT_COST', 'TOLLBOOTH_ARGON2_MEMORY_KIB', 'TOLLBOOTH_ARGON2_TIME_COST', 'TOLLBOOTH_ARGON2_PARALLELISM', 'TOLLBOOTH_SCRYPT_N', 'TOLLBOOTH_SCRYPT_R', 'TOLLBOOTH_SCRYPT_P', 'TOLLBOOTH_HASH_THREADS', 'TOLLBOOTH_LOGIN_DEADLINE_MS']) {
      assert.ok(result.stdout.includes(name), `--help mentions ${name}`)
    }
  })
})
