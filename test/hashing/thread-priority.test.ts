import assert from 'node:assert/strict'
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
    const before = threadNiceValues().filter((nice) => nice === 10).length
    const engine = await createPasswordEngine({ policy: cheapPolicy, threads: 3 })
    t.after(async () => { await engine.close() })
    const values = threadNiceValues()
    assert.equal(values.filter((nice) => nice === 10).length - before, 3, `nice values: ${values.join(' ')}`)
    const mainStat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8')
    assert.equal(Number(mainStat.slice(mainStat.lastIndexOf(')') + 2).split(' ')[16]), processNice, 'the main thread is untouched')
  })

  it('keeps the default priority with threadNice 0', async (t) => {
    const before = threadNiceValues().filter((nice) => nice !== processNice).length
    const engine = await createPasswordEngine({ policy: cheapPolicy, threads: 2, threadNice: 0 })
    t.after(async () => { await engine.close() })
    assert.equal(threadNiceValues().filter((nice) => nice !== processNice).length, before, 'the new threads have the process\'s nice value')
  })
})
