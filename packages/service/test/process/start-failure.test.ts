import { harnessEntry } from '../helpers/cli.js'
import assert from 'node:assert/strict'
import { createHook } from 'node:async_hooks'
import cluster from 'node:cluster'
import fs from 'node:fs'
import net, { type AddressInfo } from 'node:net'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { scratchClusterDir } from '../../src/db/embedded/embedded.js'
import { packageRoot } from '../../src/paths.js'
import { startClusterPrimary } from '../../src/process/cluster.js'
import { startService } from '../../src/process/start.js'
import { createTestDatabase } from '../helpers/database.js'
import { capturingLogger, testJwtSecret, testKeyEncryptionKey } from '../helpers/service.js'

/** Timers created by `work` and still pending once it has settled: what it left running. */
async function timersLeftBy (work: () => Promise<unknown>): Promise<number> {
  const pending = new Set<number>()
  const hook = createHook({
    init (asyncId, type) {
      // Piscina's own deadline on closing, which it clears when its threads have stopped.
      if (type === 'Timeout' && !(new Error().stack ?? '').includes('ThreadPool.close')) pending.add(asyncId)
    },
    destroy (asyncId) { pending.delete(asyncId) },
  }).enable()
  try {
    await work().catch(() => {})
    // Destroy hooks of cleared timers run on a later turn of the loop.
    await new Promise((resolve) => setImmediate(resolve))
    await new Promise((resolve) => setImmediate(resolve))
  } finally {
    hook.disable()
  }
  return pending.size
}

async function portIsClosed (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => { resolve(true) })
  })
}

async function squat (): Promise<{ port: number, close: () => void }> {
  const server = net.createServer()
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  return { port: (server.address() as AddressInfo).port, close: () => { server.close() } }
}

describe('a start that fails', () => {
  // One data folder for the two embedded starts: the first initialises the cluster (initdb), the
  // second reuses it, which it can only if the first failed start stopped PostgreSQL cleanly.
  const dataDir = path.dirname(scratchClusterDir('failed-start'))
  after(() => { fs.rmSync(dataDir, { recursive: true, force: true }) })

  it('when the port is taken: rejects, and stops the app, the engine and the pool it had started', async () => {
    const db = await createTestDatabase()
    const squatter = await squat()
    try {
      const { port } = squatter
      const { logger } = capturingLogger('silent')
      const config = loadConfig({ env: {}, overrides: { databaseUrl: db.url, publicUrl: 'http://127.0.0.1', jwtSecret: testJwtSecret, keyEncryptionKey: testKeyEncryptionKey, port, logLevel: 'silent', hashThreads: 1 } })
      let failure: unknown
      const left = await timersLeftBy(async () => { await startService(config, { logger }).catch((err: unknown) => { failure = err }) })
      assert.equal((failure as { code?: string } | undefined)?.code, 'EADDRINUSE')
      // The app's own timers (metrics canary, event-loop sampling) are stopped by its close.
      assert.equal(left, 0, `${left} timer(s) left running after the failed start`)
    } finally {
      squatter.close()
      await db.drop()
    }
  })

  it('the cluster primary, when its workers cannot listen: rejects, with no worker and no embedded PostgreSQL left running', async () => {
    const squatter = await squat()
    // The workers run the lab's harness, as under its `--hash-strategy cluster`.
    cluster.setupPrimary({ exec: harnessEntry, args: ['--hash-strategy', 'cluster'], silent: true })
    try {
      const { logger, lines } = capturingLogger('info')
      const config = loadConfig({ env: {}, overrides: { dataDir, port: squatter.port, logLevel: 'info', hashThreads: 2 } })
      await assert.rejects(startClusterPrimary(config, logger, { strategy: 'cluster', shedding: false, processPerCpu: true }), /exited with code 1 before listening/)
      const pgPort = Number(lines.find((line) => line.msg === 'embedded PostgreSQL started')?.port)
      assert.ok(pgPort > 0, 'the embedded PostgreSQL had started')
      assert.ok(await portIsClosed(pgPort), 'the embedded PostgreSQL was stopped')
      assert.deepEqual(Object.values(cluster.workers ?? {}).filter((worker) => worker?.isDead() === false), [], 'no worker left running')
    } finally {
      squatter.close()
    }
  })

  it('serve --workers 2, when its workers cannot listen: rejects, with no worker and no embedded PostgreSQL left running', async () => {
    const squatter = await squat()
    cluster.setupPrimary({ exec: path.join(packageRoot, 'bin', 'tollbooth.js'), silent: true })
    try {
      const { logger, lines } = capturingLogger('info')
      const config = loadConfig({ env: {}, overrides: { dataDir, port: squatter.port, logLevel: 'info', workers: 2, hashThreads: 2 } })
      await assert.rejects(startClusterPrimary(config, logger), /exited with code 1 before listening/)
      const pgPort = Number(lines.find((line) => line.msg === 'embedded PostgreSQL started')?.port)
      assert.ok(pgPort > 0, 'the embedded PostgreSQL had started')
      assert.ok(await portIsClosed(pgPort), 'the embedded PostgreSQL was stopped')
      assert.deepEqual(Object.values(cluster.workers ?? {}).filter((worker) => worker?.isDead() === false), [], 'no worker left running')
      assert.ok(!lines.some((line) => line.msg === 'cluster worker died: starting a replacement'), 'a worker failing at the start is not replaced')
    } finally {
      squatter.close()
    }
  })
})
