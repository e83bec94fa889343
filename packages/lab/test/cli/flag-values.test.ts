/**
 * The values of the lab's flags as users write them: durations (also in scenario files), k6's
 * stages, fractions.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseFraction, parseStages } from '../../src/cli/commands.js'
import { parseDurationMs } from '../../src/time.js'

describe('durations and stages', () => {
  it('parses durations in ms, s, m, h and combinations', () => {
    assert.equal(parseDurationMs('500ms'), 500)
    assert.equal(parseDurationMs('30s'), 30_000)
    assert.equal(parseDurationMs('1.5m'), 90_000)
    assert.equal(parseDurationMs('1m30s'), 90_000)
    assert.equal(parseDurationMs('2'), 2000)
    for (const bad of ['', 'abc', '10 parsecs', '5x', '1m 30s']) assert.throws(() => parseDurationMs(bad), { code: 'CONFIG_INVALID' }, bad)
  })

  it('parses k6-style stages and refuses malformed ones', () => {
    assert.deepEqual(parseStages('30s:100, 1m:100,10s:0'), [
      { durationMs: 30_000, target: 100 }, { durationMs: 60_000, target: 100 }, { durationMs: 10_000, target: 0 },
    ])
    for (const bad of ['', '30s', '30s:x', '0s:10', '30s:10:5']) assert.throws(() => parseStages(bad), { code: 'CONFIG_INVALID' }, bad)
  })

  it('parses fractions as percentages or decimals', () => {
    assert.equal(parseFraction('10%', 'x'), 0.1)
    assert.equal(parseFraction('0.25', 'x'), 0.25)
    assert.throws(() => parseFraction('-5%', 'x'), { code: 'CONFIG_INVALID' })
  })
})
