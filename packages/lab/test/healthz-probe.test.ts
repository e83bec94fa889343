/**
 * The /healthz probe measures the service, not the lab: it sends and times its probes in a
 * thread of its own, so a busy lab main thread (merging the generators' seconds, scraping
 * /metrics) does not show as service latency. The server runs in a child process, so that
 * blocking this thread blocks only the lab's side.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { nowEpochMs } from '../src/schedule.js'
import { HealthzProbe } from '../src/probe.js'

const serverCode = `
const server = require('node:http').createServer((request, response) => { response.end('{"status":"ok"}') })
server.listen(0, '127.0.0.1', () => { console.log(server.address().port) })
`

describe('the /healthz probe', () => {
  it('times its probes in its own thread: a blocked lab main thread does not delay them', async () => {
    const server = spawn(process.execPath, ['-e', serverCode], { stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      const [chunk] = await once(server.stdout, 'data') as [Buffer]
      const url = `http://127.0.0.1:${chunk.toString().trim()}`
      const runStartEpochMs = nowEpochMs()
      const probe = new HealthzProbe({ url, ratePerSecond: 20, runStartEpochMs, timeoutMs: 5000 })
      probe.start()
      // The load's duration, not synchronisation: probes go out at 20/s before, during and after the block.
      await sleep(500)
      const blockedUntil = performance.now() + 400
      while (performance.now() < blockedUntil) { /* the lab's main thread, busy for 400 ms */ }
      await sleep(500)
      await probe.stop()
      const summary = probe.summary()
      assert.ok(summary !== null && summary.count >= 10, `probes answered: ${summary?.count}`)
      assert.equal(probe.failures, 0)
      assert.equal(probe.error, undefined)
      // Timed on the blocked thread, the probes due during the block would read 200 to 400 ms.
      assert.ok((summary.maxMs ?? Infinity) < 200, `slowest probe ${summary.maxMs} ms`)
      assert.ok(probe.second(1) !== null, 'probes are kept by the second they ended in')
    } finally {
      server.kill()
    }
  })

  it('sends nothing at rate 0', async () => {
    const probe = new HealthzProbe({ url: 'http://127.0.0.1:9', ratePerSecond: 0, runStartEpochMs: nowEpochMs(), timeoutMs: 1000 })
    probe.start()
    await probe.stop()
    assert.equal(probe.summary(), null)
  })
})
