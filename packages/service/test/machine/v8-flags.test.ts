import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { nodeTakes, withServiceV8Flags } from '../../src/machine/v8-flags.js'

describe('the service\'s V8 flags', () => {
  const budget = '--interrupt-budget=16384'
  // Node.js 20's V8 has the flag; a later one tiers by invocation counts and refuses it.
  const takesBudget = nodeTakes(budget)

  it('are added before node\'s other flags where this node takes them, each only where the operator gave none of its name', () => {
    const added = takesBudget ? [budget] : []
    assert.deepEqual(withServiceV8Flags([]), added)
    assert.deepEqual(withServiceV8Flags(['--max-old-space-size=512']), [...added, '--max-old-space-size=512'])
    assert.deepEqual(withServiceV8Flags(['--interrupt-budget=67584']), ['--interrupt-budget=67584'], 'the operator\'s value kept')
    assert.deepEqual(withServiceV8Flags(['--interrupt_budget=67584']), ['--interrupt_budget=67584'], 'V8 reads _ as -')
  })

  it('asks this node which V8 flags it takes', () => {
    assert.equal(nodeTakes('--max-old-space-size=512'), true)
    assert.equal(nodeTakes('--no-such-v8-flag-here'), false)
    if (Number(process.versions.node.split('.')[0]) <= 20) assert.equal(takesBudget, true, 'Node.js 20 takes it')
  })
})
