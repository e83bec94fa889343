import assert from 'node:assert/strict'
import net from 'node:net'
import { performance } from 'node:perf_hooks'
import { after, before, describe, it } from 'node:test'
import type pg from 'pg'
import { createDatabasePool } from '../../src/db/pool.js'
import { KeyChangeListener } from '../../src/keys/key-changes.js'
import { retireKey, rotateKey, type KeyAdminOptions } from '../../src/keys/key-admin.js'
import { DatabaseKeySource, KeyRing, type RingLog } from '../../src/keys/key-ring.js'
import { parseKeyEncryptionKey } from '../../src/keys/sealing.js'
import { createTestDatabase, type TestDatabase } from '../helpers/database.js'
import { testKeyEncryptionKey } from '../helpers/service.js'
import { startTcpProxy } from '../helpers/net/tcp-proxy.js'
import { waitFor } from '../helpers/wait.js'

const keyEncryptionKey = parseKeyEncryptionKey(testKeyEncryptionKey, 'test')
const creation = { keyEncryptionKey, alg: 'EdDSA' as const }
/** Periodic reloads an hour apart: what a ring learns within a test, it learns by a notification. */
const reloadIntervalMs = 3_600_000
const silentPool = { log: { warn: () => {} } }

interface LogLine { level: 'info' | 'warn' | 'error', fields: object, message: string }

function capturingLog (): { log: RingLog, lines: LogLine[] } {
  const lines: LogLine[] = []
  const line = (level: LogLine['level']) => (fields: object, message: string): void => { lines.push({ level, fields, message }) }
  return { log: { info: line('info'), warn: line('warn'), error: line('error') }, lines }
}

async function openRing (pool: pg.Pool, log: RingLog = capturingLog().log): Promise<KeyRing> {
  const source = new DatabaseKeySource({ db: pool, keyEncryptionKey, rotation: { alg: 'EdDSA', rotationMs: 0, publishAheadMs: 360_000 }, accessTokenTtlMs: 900_000, now: Date.now, log })
  return await KeyRing.open(source, { reloadIntervalMs, log })
}

const admin = (db: TestDatabase): KeyAdminOptions => ({ db: db.pool, accessTokenTtlMs: 900_000, now: Date.now })

/** The server processes of the connections listening for key changes on this test's database. */
async function listeners (db: TestDatabase): Promise<number[]> {
  const { rows } = await db.pool.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tollbooth key changes'")
  return rows.map((row) => row.pid)
}

describe('key rings reload as a change is notified', () => {
  let db: TestDatabase
  before(async () => { db = await createTestDatabase() })
  after(async () => { await db.drop() })

  it('a key retired elsewhere stops signing and verifying on every ring at once, and the one created in its place signs', async () => {
    const pools = [createDatabasePool(db.url, 2, silentPool), createDatabasePool(db.url, 2, silentPool)]
    const rings = await Promise.all(pools.map(async (pool) => await openRing(pool)))
    try {
      const old = rings[0]?.signing.kid ?? ''
      assert.ok(rings.every((ring) => ring.signing.kid === old))
      const retirement = await retireKey(admin(db), creation, old)
      assert.equal(retirement.outcome, 'retired')
      const replacement = retirement.outcome === 'retired' ? retirement.replacement?.kid : undefined
      assert.ok(replacement !== undefined)
      await waitFor('every ring to drop the retired key', () => rings.every((ring) => ring.find(old) === undefined && ring.signing.kid === replacement), { timeoutMs: 2000, intervalMs: 5 })

      const rotated = await rotateKey(admin(db), creation, 360_000)
      await waitFor('every ring to publish the key created', () => rings.every((ring) => ring.find(rotated.kid) !== undefined), { timeoutMs: 2000, intervalMs: 5 })
      assert.ok(rings.every((ring) => ring.signing.kid === replacement), 'a key published ahead does not sign yet')
    } finally {
      await Promise.all(rings.map(async (ring) => { await ring.close() }))
      await Promise.all(pools.map(async (pool) => { await pool.end() }))
    }
  })

  it('the listening connection is its own, one per ring, and closed with the ring', async () => {
    const pool = createDatabasePool(db.url, 2, silentPool)
    const ring = await openRing(pool)
    try {
      // The earlier test's rings have closed theirs; their server processes may take a moment to go.
      await waitFor('the ring\'s one listening connection', async () => (await listeners(db)).length === 1)
      assert.equal(pool.idleCount, pool.totalCount, 'no pooled connection is held for the listener')
    } finally {
      await ring.close()
      await pool.end()
    }
    await waitFor('the listening connection to close', async () => (await listeners(db)).length === 0)
  })

  it('a listening connection the server ends is made again, without taking the process down, and a change made meanwhile is loaded', async () => {
    const pool = createDatabasePool(db.url, 2, silentPool)
    const { log, lines } = capturingLog()
    const ring = await openRing(pool, log)
    try {
      const [pid] = await listeners(db)
      assert.ok(pid !== undefined)
      await db.pool.query('SELECT pg_terminate_backend($1)', [pid])
      const old = ring.signing.kid
      await retireKey(admin(db), creation, old)
      await waitFor('the ring to drop the retired key', () => ring.find(old) === undefined)
      await waitFor('a new listening connection', async () => (await listeners(db)).some((listener) => listener !== pid))
      assert.ok(lines.some((line) => line.level === 'warn' && line.message.includes('lost the connection that listens for key changes')))
    } finally {
      await ring.close()
      await pool.end()
    }
  })

  it('through an outage of the database, the listener reconnects once it is back and reloads: the change it could not be told of is loaded', async () => {
    const proxy = await startTcpProxy(db.url)
    const pool = createDatabasePool(proxy.proxied(db.url), 2, silentPool)
    const { log, lines } = capturingLog()
    const ring = await openRing(pool, log)
    try {
      const old = ring.signing.kid
      await proxy.stop()
      await waitFor('the listener to see the outage', () => lines.some((line) => line.message.includes('lost the connection')))
      // Straight to the database: its notification cannot reach the ring.
      const retirement = await retireKey(admin(db), creation, old)
      assert.equal(retirement.outcome, 'retired')
      assert.equal(ring.signing.kid, old, 'unreachable, the ring keeps the keys in hand')
      await proxy.start()
      await waitFor('the ring to reload once listening again', () => ring.find(old) === undefined, { intervalMs: 5 })
      const back = lines.find((line) => line.message.includes('listening for key changes again'))
      assert.ok(back !== undefined)
      assert.ok((back.fields as { attempts: number }).attempts >= 1)
    } finally {
      await ring.close()
      await pool.end()
      await proxy.close()
    }
  })

  it('a listening connection gone silent is found by its heartbeat and made again', async () => {
    const proxy = await startTcpProxy(db.url)
    const pool = createDatabasePool(proxy.proxied(db.url), 1, silentPool)
    const { log, lines } = capturingLog()
    let changes = 0
    const listener = await KeyChangeListener.start({ db: pool, onChange: () => { changes++ }, log, heartbeatIntervalMs: 20, heartbeatTimeoutMs: 100, initialBackoffMs: 20 })
    try {
      proxy.freeze()
      await waitFor('the heartbeat to give the connection up', () => lines.some((line) => line.message.includes('lost the connection')))
      proxy.thaw()
      await waitFor('the listener to listen again and reload', () => changes === 1 && lines.some((line) => line.message.includes('listening for key changes again')))
    } finally {
      await listener.close()
      await pool.end()
      await proxy.close()
    }
  })
})

describe('reconnection backoff', () => {
  it('retries with growing delays, capped, while the database refuses, with one warning', async () => {
    // A server that takes each connection and drops it at once: every attempt fails, and is seen.
    const attemptsAtMs: number[] = []
    const server = net.createServer((socket) => {
      attemptsAtMs.push(performance.now())
      socket.destroy()
    })
    await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
    const { port } = server.address() as net.AddressInfo
    const pool = createDatabasePool(`postgres://nobody:secret@127.0.0.1:${port}/nothing`, 1, silentPool)
    const { log, lines } = capturingLog()
    const initialBackoffMs = 10
    const maxBackoffMs = 80
    const listener = await KeyChangeListener.start({ db: pool, onChange: () => {}, log, heartbeatIntervalMs: reloadIntervalMs, initialBackoffMs, maxBackoffMs })
    try {
      await waitFor('eight attempts', () => attemptsAtMs.length >= 8)
      // Each delay is at least half its ceiling (the rest is jitter), the ceiling doubling up to the cap.
      for (let retry = 1; retry < 8; retry++) {
        const ceilingMs = Math.min(maxBackoffMs, initialBackoffMs * 2 ** (retry - 1))
        const gapMs = (attemptsAtMs[retry] ?? 0) - (attemptsAtMs[retry - 1] ?? 0)
        assert.ok(gapMs >= ceilingMs / 2 - 1, `retry ${retry} came ${gapMs.toFixed(1)} ms after the one before, under half its ${ceilingMs} ms ceiling`)
      }
      assert.equal(lines.filter((line) => line.level === 'warn').length, 1, 'one warning for the outage, not one per attempt')
    } finally {
      await listener.close()
      await new Promise<void>((resolve) => { server.close(() => { resolve() }) })
      await pool.end()
    }
  })
})
