import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { spawnSync } from 'node:child_process'
import { serviceV8Flags, withServiceV8Flags } from '../../src/machine/v8-flags.js'

describe('the service\'s V8 flags', () => {
  it('are added before node\'s other flags, each only where the operator gave none of its name', () => {
    assert.deepEqual(serviceV8Flags, ['--interrupt-budget=16384'])
    assert.deepEqual(withServiceV8Flags([]), ['--interrupt-budget=16384'])
    assert.deepEqual(withServiceV8Flags(['--max-old-space-size=512']), ['--interrupt-budget=16384', '--max-old-space-size=512'])
    assert.deepEqual(withServiceV8Flags(['--interrupt-budget=67584']), ['--interrupt-budget=67584'], 'the operator\'s value kept')
    assert.deepEqual(withServiceV8Flags(['--interrupt_budget=67584']), ['--interrupt_budget=67584'], 'V8 reads _ as -')
  })

  it('are flags this node takes', () => {
    // node refuses a V8 flag it does not know with "bad option": a node that dropped it would fail every start.
    const { status, stderr } = spawnSync(process.execPath, [...serviceV8Flags, '-e', ''], { encoding: 'utf8' })
    assert.equal(status, 0, stderr)
  })
})
