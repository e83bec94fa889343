import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import Fastify from 'fastify'
import { installErrorHandling } from '../../src/http/error-handler.js'
import { installDrain } from '../../src/overload/drain.js'

async function drainApp (phases: string[]): Promise<{ app: ReturnType<typeof Fastify>, drain: ReturnType<typeof installDrain> }> {
  const app = Fastify({ logger: false })
  installErrorHandling(app)
  const drain = installDrain(app, { onPhase: (phase, drainMs) => { phases.push(`${phase} ${drainMs}`) } })
  app.get('/readyz', async () => ({ status: 'ready' }))
  app.get('/work', async () => ({ served: true }))
  await app.ready()
  return { app, drain }
}

describe('the drain before a shutdown (mock clock)', () => {
  it('turns /readyz to 503 at once, keeps serving the rest with connection: close for exactly the drain, then ends', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] })
    const phases: string[] = []
    const { app, drain } = await drainApp(phases)
    try {
      assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200)
      assert.equal(drain.draining, false)

      let over = false
      const running = drain.run(5000).then(() => { over = true })
      assert.equal(drain.draining, true)
      assert.deepEqual(phases, ['draining 5000'])
      const readiness = await app.inject({ url: '/readyz' })
      assert.equal(readiness.statusCode, 503)
      assert.equal(readiness.json().error.code, 'SHUTTING_DOWN')
      assert.equal(readiness.headers['retry-after'], undefined, 'a health check is not paced')
      const served = await app.inject({ url: '/work' })
      assert.equal(served.statusCode, 200)
      assert.deepEqual(served.json(), { served: true })
      assert.equal(served.headers.connection, 'close', 'keep-alive clients reconnect through the balancer')

      t.mock.timers.tick(4999)
      await new Promise((resolve) => setImmediate(resolve))
      assert.equal(over, false, 'still draining 1 ms before the end')
      assert.equal((await app.inject({ url: '/work' })).statusCode, 200)
      t.mock.timers.tick(1)
      await running
      assert.equal(over, true)
      assert.deepEqual(phases, ['draining 5000', 'drained 5000'])
    } finally {
      await app.close()
    }
  })

  it('resolves after the drain, once for every caller; readiness stays off and connection: close stops', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] })
    const phases: string[] = []
    const { app, drain } = await drainApp(phases)
    try {
      const first = drain.run(2000)
      const second = drain.run(2000)
      t.mock.timers.tick(2000)
      await Promise.all([first, second])
      assert.deepEqual(phases, ['draining 2000', 'drained 2000'])
      assert.equal((await app.inject({ url: '/readyz' })).statusCode, 503)
      assert.notEqual((await app.inject({ url: '/work' })).headers.connection, 'close')
    } finally {
      await app.close()
    }
  })
})
