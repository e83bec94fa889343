/**
 * `startHealthzProbe` (lab.ts): /healthz of any address probed beside a load, as bench:haproxy
 * probes a replica straight while the crowd goes through HAProxy. A real server on a real
 * socket; the test waits on the probes it serves, not on a timer.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { once } from 'node:events'
import { describe, it } from 'node:test'
import { startHealthzProbe } from '../../src/lab.js'

/** Answers /healthz, every third with a 503; resolves `served` once `wanted` probes came. */
async function countingServer (wanted: number): Promise<{ url: string, served: Promise<void>, paths: string[], close: () => Promise<void> }> {
  const paths: string[] = []
  let reached: () => void = () => {}
  const served = new Promise<void>((resolve) => { reached = resolve })
  const server = http.createServer((request, response) => {
    paths.push(request.url ?? '')
    response.statusCode = paths.length % 3 === 0 ? 503 : 200
    response.end('{"status":"ok"}')
    if (paths.length === wanted) reached()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    paths,
    close: async () => { server.closeAllConnections(); await new Promise((resolve) => server.close(resolve)) },
  }
}

describe('a /healthz probe beside a load', () => {
  it('probes the address it is given until stopped, timing every answer and counting those other than a 200 as failures', { timeout: 30_000 }, async () => {
    const server = await countingServer(9)
    try {
      const probe = startHealthzProbe({ url: server.url, ratePerSecond: 50 })
      await server.served
      const { healthz, failures } = await probe.stop()
      assert.ok(server.paths.length >= 9)
      assert.ok(server.paths.every((path) => path === '/healthz'), server.paths.join(', '))
      // The prober first opens its connections with unrecorded requests (probe.ts, warmUp): every
      // probe recorded was served. A 503 is an answer: timed, and counted as a failure too.
      assert.ok(healthz.count >= 1 && healthz.count <= server.paths.length, `${healthz.count} timed, of ${server.paths.length} served`)
      assert.ok(failures >= 1, 'the 503s are counted as failures')
      assert.ok(failures <= healthz.count, `${failures} failed: every one an answered 503, so timed as well`)
      assert.ok(healthz.p99Ms !== null && healthz.p99Ms > 0)
    } finally {
      await server.close()
    }
  })
})
