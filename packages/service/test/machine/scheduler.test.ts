/**
 * Reading whether the scheduler groups processes by session (machine/scheduler.ts), from a file
 * written as the kernel writes /proc/sys/kernel/sched_autogroup_enabled.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { schedulerAutogroups } from '../../src/machine/index.js'

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-autogroup-'))
after(() => { fs.rmSync(dir, { recursive: true, force: true }) })

function setting (name: string, text: string): string {
  const file = path.join(dir, name)
  fs.writeFileSync(file, text)
  return file
}

describe('scheduler autogroups', () => {
  it('reads on and off as the kernel writes them, with their newline', () => {
    assert.equal(schedulerAutogroups(setting('on', '1\n')), true)
    assert.equal(schedulerAutogroups(setting('off', '0\n')), false)
  })

  it('says it does not know when the file is missing or holds anything else', () => {
    assert.equal(schedulerAutogroups(path.join(dir, 'missing')), null)
    assert.equal(schedulerAutogroups(setting('other', '2\n')), null)
    assert.equal(schedulerAutogroups(setting('empty', '')), null)
  })
})
