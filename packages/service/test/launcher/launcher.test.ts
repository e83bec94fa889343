/**
 * The launcher API (tollbooth/launcher) and the ready file it relies on: what the lab and the
 * test runner use to start the service without reading its logs.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { once } from 'node:events'
import { after, before, describe, it } from 'node:test'
import { detectCpuBudget } from '../../src/machine/cpu-budget.js'
import { missingHashMallocEnv } from '../../src/machine/malloc-env.js'
import { withServiceV8Flags } from '../../src/machine/v8-flags.js'
import { openFilesLimit, ownOpenFilesLimit } from '../../src/machine/open-files.js'
import { machineFacts, serviceVersion, startServe, tollboothBin } from '../../src/launcher/index.js'
import { startCli, stopCli } from '../helpers/cli.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { serveEnv } from '../helpers/service.js'

/** A cheap argon2id service on the test database (serveEnv's base, with the default algorithm). */
function serviceEnv (databaseUrl: string, more: Record<string, string> = {}): NodeJS.ProcessEnv {
  return serveEnv(databaseUrl, {
    HOST: '127.0.0.1',
    TOLLBOOTH_HASH_ALGORITHM: 'argon2id',
    TOLLBOOTH_ARGON2_MEMORY_KIB: '1024',
    TOLLBOOTH_ARGON2_TIME_COST: '1',
    TOLLBOOTH_HASH_THREADS: '1',
    ...more,
  })
}

describe('startServe: `tollbooth serve` as its own process, its URL from the ready file', () => {
  let database: TestDatabase
  before(async () => { database = await createTestDatabase({ migrate: false }) })
  after(async () => { await database.drop() })

  it('resolves once the service listens, with its URL and pid; stop() ends the process', async () => {
    const service = await startServe({ env: serviceEnv(database.url) })
    try {
      assert.match(service.url, /^http:\/\/127\.0\.0\.1:\d+$/)
      assert.notEqual(service.url, 'http://127.0.0.1:0')
      assert.equal(service.ready.pid, service.pid, 'without libuv-128 the process started is the one listening')
      assert.equal(service.ready.version, serviceVersion)
      assert.equal(service.ready.strategy, 'tollbooth')
      const health = await fetch(`${service.url}/healthz`)
      assert.equal(health.status, 200)
      const commandLine = fs.readFileSync(`/proc/${service.pid}/cmdline`, 'utf8').split('\0')
      for (const flag of withServiceV8Flags([])) assert.ok(commandLine.includes(flag), `node started with the service's V8 flags this node takes: ${flag}`)
      const added = missingHashMallocEnv(serviceEnv(database.url))
      if (Object.keys(added).length > 0) {
        const environment = fs.readFileSync(`/proc/${service.pid}/environ`, 'utf8').split('\0')
        for (const [name, value] of Object.entries(added)) assert.ok(environment.includes(`${name}=${value}`), `started with glibc's malloc settings for hashing: ${name}`)
      }
    } finally {
      await service.stop()
    }
    assert.throws(() => process.kill(service.pid, 0), { code: 'ESRCH' }, 'the process is gone')
  })

  it('rejects with the end of the service\'s output when it exits before listening', async () => {
    await assert.rejects(startServe({ env: serviceEnv(database.url, { TOLLBOOTH_BCRYPT_COST: '99' }) }), (err: Error) => {
      assert.match(err.message, /exited \(code 2/)
      assert.match(err.message, /TOLLBOOTH_BCRYPT_COST/)
      return true
    })
  })

  it('rejects and kills the service when it does not listen in time', async () => {
    await assert.rejects(startServe({ env: serviceEnv(database.url), startTimeoutMs: 1 }), /did not listen within 1 ms/)
  })
})

/** The ready file's contents once they name `url`: the service writes it just after its "listening" log line. */
async function readyFileFor (file: string, url: string): Promise<Record<string, unknown>> {
  const watcher = fs.watch(path.dirname(file))
  try {
    for (;;) {
      const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ''
      const ready = text === '' ? undefined : JSON.parse(text) as Record<string, unknown>
      if (ready?.url === url) return ready
      await once(watcher, 'change')
    }
  } finally {
    watcher.close()
  }
}

describe('serve --ready-file', () => {
  let database: TestDatabase
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-ready-test-'))
  before(async () => { database = await createTestDatabase({ migrate: false }) })
  after(async () => {
    await database.drop()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('holds the URL the service listens on, its pid, version and strategy, once it listens', async () => {
    const file = path.join(dir, 'ready.json')
    fs.writeFileSync(file, JSON.stringify({ url: 'http://127.0.0.1:1', pid: 1 }))
    const started = await startCli(serviceEnv(database.url), ['serve', '--ready-file', file], 120_000)
    try {
      const ready = await readyFileFor(file, started.url)
      assert.deepEqual(ready, { url: started.url, pid: started.pid, version: serviceVersion, strategy: 'tollbooth' })
      assert.deepEqual(fs.readdirSync(dir), ['ready.json'], 'no partial file left beside it')
      // `serve` started by hand, as `npm start` does: where glibc takes the malloc settings for
      // hashing, the `tollbooth` command starts node again with them (test/process/malloc-reexec.test.ts).
      const metrics = await (await fetch(`${started.url}/metrics`)).text()
      const glibcTakesThem = Object.keys(missingHashMallocEnv({})).length > 0
      assert.match(metrics, new RegExp(`tollbooth_hash_pool_info\\{[^}]*malloc_settings="${glibcTakesThem ? 'set' : 'not applicable'}"`))
      assert.equal(started.lines().some((line) => String(line.msg).startsWith('glibc malloc')), false, 'no hint: nothing left to set')
    } finally {
      assert.equal(await stopCli(started), 0)
    }
  })

  it('is removed at start, so a file from an earlier run never passes for this one', async () => {
    const file = path.join(dir, 'stale.json')
    fs.writeFileSync(file, JSON.stringify({ url: 'http://127.0.0.1:1', pid: 1 }))
    // A database that refuses connections: the service exits before it listens.
    const child = spawn(process.execPath, [tollboothBin, 'serve', '--ready-file', file], { env: serviceEnv('postgres://tollbooth@127.0.0.1:1/none'), stdio: 'ignore' })
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    assert.notEqual(code, 0)
    assert.equal(fs.existsSync(file), false)
  })
})

describe('machineFacts', () => {
  it('gives the CPU budget the service sizes its pool to, and its version', () => {
    const facts = machineFacts()
    const budget = detectCpuBudget()
    assert.deepEqual(facts.cpuBudget, { cpus: budget.cpus, quota: budget.quota ?? null, source: budget.source })
    assert.equal(facts.serviceVersion, serviceVersion)
  })

  it('gives the calling process\'s soft open-files limit, as a child it starts inherits it; undefined where /proc cannot tell', () => {
    const inherited = openFilesLimit(execFileSync('cat', ['/proc/self/limits'], { encoding: 'utf8' }))
    assert.ok(inherited !== undefined && inherited > 0)
    assert.equal(machineFacts().openFiles, inherited)
    assert.equal(ownOpenFilesLimit('/proc/no-such-file/limits'), undefined)
  })
})
