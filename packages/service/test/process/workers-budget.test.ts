import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig, parseWorkers } from '../../src/config/index.js'
import { splitCpuBudget } from '../../src/process/worker-budget.js'

describe('serve --workers: one CPU budget shared by the worker processes', () => {
  it('gives each worker floor(budget / workers) hash threads, at least one', () => {
    assert.deepEqual(splitCpuBudget(2, 2), { workers: 2, threadsPerWorker: 1, budget: 2, unusedCpus: 0, oversubscribed: false })
    assert.deepEqual(splitCpuBudget(8, 2), { workers: 2, threadsPerWorker: 4, budget: 8, unusedCpus: 0, oversubscribed: false })
    // The remainder runs no hash thread: the event loops and PostgreSQL have it.
    assert.deepEqual(splitCpuBudget(3, 2), { workers: 2, threadsPerWorker: 1, budget: 3, unusedCpus: 1, oversubscribed: false })
  })

  it('more workers than the budget: one thread each, oversubscribed', () => {
    assert.deepEqual(splitCpuBudget(2, 3), { workers: 3, threadsPerWorker: 1, budget: 2, unusedCpus: 0, oversubscribed: true })
  })

  it('0 (auto): one worker per CPU of the budget, one thread each', () => {
    assert.deepEqual(splitCpuBudget(4, 0), { workers: 4, threadsPerWorker: 1, budget: 4, unusedCpus: 0, oversubscribed: false })
  })

  it('TOLLBOOTH_WORKERS / --workers: a count, auto, or refused', () => {
    assert.equal(loadConfig({ env: {} }).workers, 1)
    assert.equal(loadConfig({ env: { TOLLBOOTH_WORKERS: 'auto' } }).workers, 0)
    assert.equal(loadConfig({ env: {}, argv: ['--workers', '3'] }).workers, 3)
    assert.equal(parseWorkers('AUTO'), 0)
    for (const bad of ['-1', '1.5', 'two', '257']) {
      assert.throws(() => loadConfig({ env: { TOLLBOOTH_WORKERS: bad } }), (err: { code?: string, field?: string }) => err.code === 'CONFIG_INVALID' && err.field === 'TOLLBOOTH_WORKERS', bad)
    }
  })
})
