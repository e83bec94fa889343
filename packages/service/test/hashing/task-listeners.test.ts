import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createPasswordEngine, type ExecutorFactory } from '../../src/hashing/index.js'
import { executorFor } from '../../src/harness/strategies/index.js'
import { cheapPolicy } from './fixtures.js'

describe('a task listener that throws', () => {
  const executors: Array<[string, ExecutorFactory | undefined]> = [['tollbooth', undefined], ['event-loop', executorFor('event-loop')]]
  for (const [strategy, executor] of executors) {
    it(`${strategy}: hashing goes on, the error goes to the engine's log, the counters count`, async () => {
      const warnings: Array<{ fields: Record<string, unknown>, message: string }> = []
      const engine = await createPasswordEngine({
        policy: cheapPolicy,
        threads: 1,
        log: { warn: (fields, message) => { warnings.push({ fields, message }) } },
      }, executor)
      try {
        engine.onTask(() => { throw new Error('broken metrics') })
        const stored = await engine.hash('pw')
        assert.equal((await engine.verify('pw', stored)).match, true)
        assert.deepEqual(warnings.map((w) => [w.message, w.fields.reason]), [
          ['a hash task listener threw', 'broken metrics'],
          ['a hash task listener threw', 'broken metrics'],
        ])
        assert.equal(engine.stats().completed, 2)
      } finally {
        await engine.close()
      }
    })
  }

  it('the engine refuses a log without warn', async () => {
    await assert.rejects(createPasswordEngine({ policy: cheapPolicy, log: {} as never }), (err: { code?: string, field?: string }) => err.code === 'CONFIG_INVALID' && err.field === 'log.warn')
  })
})
