import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import { describe, it } from 'node:test'
import { createPasswordEngine } from '../../src/hashing/index.js'
import { cheapPolicy } from './fixtures.js'

/** The nice value of each thread of this process, from /proc (field 19 of stat). */
function threadNiceValues (): number[] {
  return fs.readdirSync('/proc/self/task').map((tid) => {
    const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[16])
  })
}

const linux = fs.existsSync('/proc/thread-self')
/** The nice value the test process started with (0 normally; 19 under `nice -n 19 npm test`). */
const processNice = os.getPriority()

describe('hash threads yield to the event loop', { skip: linux ? false : 'needs Linux /proc' }, () => {
  it('run at nice 10 by default, each thread alone; the main thread keeps its priority', async (t) => {
    // In a process already nicer than 10 the threads keep its value (see the next test).
    const expected = Math.max(10, processNice)
    const before = threadNiceValues().filter((nice) => nice === expected).length
    const engine = await createPasswordEngine({ policy: cheapPolicy, threads: 3 })
    t.after(async () => { await engine.close() })
    const values = threadNiceValues()
    assert.equal(values.filter((nice) => nice === expected).length - before, 3, `nice values: ${values.join(' ')}`)
    const mainStat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8')
    assert.equal(Number(mainStat.slice(mainStat.lastIndexOf(')') + 2).split(' ')[16]), processNice, 'the main thread is untouched')
  })

  it('never outranks the event loop: in a process at nice 15 or more the threads keep its value', () => {
    // A process of its own under `nice -n 15` (19 at most): its hash threads must not go back to 10.
    const engine = new URL('../../src/hashing/index.js', import.meta.url).href
    const policy = JSON.stringify(cheapPolicy)
    const script = `
      import fs from 'node:fs'
      import os from 'node:os'
      const { createPasswordEngine } = await import(${JSON.stringify(engine)})
      const tasks = () => fs.readdirSync('/proc/self/task')
      const niceOf = (tid) => { const stat = fs.readFileSync('/proc/self/task/' + tid + '/stat', 'utf8'); return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) }
      const before = new Set(tasks())
      const engine = await createPasswordEngine({ policy: ${policy}, threads: 2 })
      const added = tasks().filter((tid) => !before.has(tid)).map(niceOf)
      await engine.close()
      process.stdout.write(JSON.stringify({ main: os.getPriority(), added }))
    `
    const result = spawnSync('nice', ['-n', '15', process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8' })
    assert.equal(result.status, 0, result.stderr)
    const { main, added } = JSON.parse(result.stdout) as { main: number, added: number[] }
    assert.ok(main >= 15, `the child runs at nice ${main}`)
    assert.ok(added.length >= 2, `new threads: ${added.join(' ')}`)
    assert.deepEqual(added.filter((nice) => nice < main), [], `no thread below the process's nice ${main}: ${added.join(' ')}`)
  })

  it('keeps the default priority with threadNice 0', async (t) => {
    const before = threadNiceValues().filter((nice) => nice !== processNice).length
    const engine = await createPasswordEngine({ policy: cheapPolicy, threads: 2, threadNice: 0 })
    t.after(async () => { await engine.close() })
    assert.equal(threadNiceValues().filter((nice) => nice !== processNice).length, before, 'the new threads have the process\'s nice value')
  })
})
