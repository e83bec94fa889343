import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { arrivalTimes, shareOf, targetAt, totalDurationMs, vusAt } from '../../src/load/schedule.js'

const close = (actual: number, expected: number, tolerance = 1e-6): void => {
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} ≈ ${expected}`)
}

describe('closed model: virtual users over time', () => {
  const stages = [{ durationMs: 10_000, target: 100 }, { durationMs: 20_000, target: 100 }, { durationMs: 10_000, target: 0 }]

  it('ramps linearly within a stage from the previous target, as k6 does', () => {
    assert.equal(totalDurationMs(stages), 40_000)
    assert.equal(vusAt(stages, 0), 0)
    assert.equal(vusAt(stages, 5_000), 50)
    assert.equal(vusAt(stages, 9_999), 99)
    assert.equal(vusAt(stages, 10_000), 100)
    assert.equal(vusAt(stages, 25_000), 100)
    assert.equal(vusAt(stages, 35_000), 50)
    assert.equal(vusAt(stages, 45_000), 0)
  })

  it('holds a constant crowd from the start when it starts with startVus', () => {
    const constant = [{ durationMs: 10_000, target: 20 }]
    assert.equal(vusAt(constant, 0, 20), 20)
    assert.equal(vusAt(constant, 9_000, 20), 20)
    assert.equal(targetAt(constant, 5_000, 10), 15)
  })

  it('splits virtual users over generator shards without gaps or overlaps', () => {
    for (const total of [0, 1, 2, 7, 100, 101]) {
      for (const shards of [1, 2, 3, 4]) {
        let sum = 0
        for (let shard = 0; shard < shards; shard++) sum += shareOf(total, shard, shards)
        assert.equal(sum, total, `${total} over ${shards}`)
      }
    }
    assert.equal(shareOf(5, 0, 2), 3)
    assert.equal(shareOf(5, 1, 2), 2)
  })
})

describe('open model: intended arrival times', () => {
  it('spaces a constant rate evenly', () => {
    const times = [...arrivalTimes(10, [{ durationMs: 1000, target: 10 }])]
    assert.equal(times.length, 10)
    times.forEach((t, k) => close(t, k * 100))
  })

  it('packs a linear ramp ever closer: the k-th arrival of 0→r over d is at sqrt(2dk/r)', () => {
    const times = [...arrivalTimes(0, [{ durationMs: 2000, target: 10 }])]
    // N(d) = r·d/2 = 10 arrivals over the ramp.
    assert.equal(times.length, 10)
    times.forEach((t, k) => close(t, Math.sqrt((2 * 2 * k) / 10) * 1000, 1e-6))
    for (let k = 2; k < times.length; k++) {
      assert.ok((times[k] as number) - (times[k - 1] as number) < (times[k - 1] as number) - (times[k - 2] as number) + 1e-9, 'gaps shrink')
    }
  })

  it('chains stages, each ramping from the previous target', () => {
    const stages = [{ durationMs: 1000, target: 20 }, { durationMs: 1000, target: 20 }]
    const times = [...arrivalTimes(10, stages)]
    // 1 s ramping 10 -> 20 (15 arrivals) then 1 s at 20 (20 arrivals).
    assert.equal(times.length, 35)
    assert.equal(times.filter((t) => t < 1000).length, 15)
    assert.ok(times.every((t, k) => k === 0 || t >= (times[k - 1] as number)), 'in order')
    assert.ok((times.at(-1) as number) < 2000)
  })

  it('gives no arrivals at rate 0', () => {
    assert.deepEqual([...arrivalTimes(0, [{ durationMs: 5000, target: 0 }])], [])
  })
})
