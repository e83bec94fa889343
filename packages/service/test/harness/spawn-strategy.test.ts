import assert from 'node:assert/strict'
import fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, it } from 'node:test'
import { SpawnExecutor } from '../../src/harness/strategies/spawn.js'
import { cheapPolicy, rejection, unadmitted } from '../hashing/fixtures.js'

const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}.js`, import.meta.url))

/** This process's children (spawned from the main thread), from /proc. */
function children (): number[] {
  return fs.readFileSync(`/proc/self/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).filter((pid) => pid !== '').map(Number)
}

describe('the spawn strategy (a child process per hash)', () => {
  it('a child that exits before reading its task fails that request; the closed pipe does not end the process', async () => {
    const executor = new SpawnExecutor({ script: fixture('child-exits-at-once') })
    try {
      // A task larger than a pipe's buffer, so the write is still going when the child exits.
      const password = 'x'.repeat(4 * 1024 * 1024)
      for (let i = 0; i < 3; i++) {
        await rejection(executor.run({ kind: 'hash', algorithm: 'bcrypt', params: cheapPolicy.bcrypt, password }, unadmitted('hash')), 'INTERNAL')
      }
      assert.equal(executor.stats().failed, 3)
    } finally {
      await executor.close()
    }
  })

  it('a child that does not answer in time is killed and its request fails', async () => {
    const executor = new SpawnExecutor({ script: fixture('child-never-answers'), timeoutMs: 300 })
    try {
      const before = children()
      const err = await rejection(executor.run({ kind: 'verify', password: 'pw', stored: '$2b$04$' }, unadmitted()), 'INTERNAL')
      assert.match(err.message, /did not answer within 300 ms/)
      assert.deepEqual(children().filter((pid) => !before.includes(pid)), [], 'no child left running')
    } finally {
      await executor.close()
    }
  })

  it('closing kills the children still running; their requests fail', async () => {
    const executor = new SpawnExecutor({ script: fixture('child-never-answers') })
    const before = children()
    const running = [1, 2].map(async () => await rejection(executor.run({ kind: 'verify', password: 'pw', stored: '$2b$04$' }, unadmitted()), 'INTERNAL'))
    assert.equal(children().filter((pid) => !before.includes(pid)).length, 2, 'two children started')
    await executor.close()
    assert.deepEqual(children().filter((pid) => !before.includes(pid)), [], 'no child left running')
    await Promise.all(running)
  })
})
