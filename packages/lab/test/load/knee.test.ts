import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { defaultKneeCriteria, judgeStep, kneeOf, searchKnee, type MeasuredStep } from '../../src/load/knee.js'
import type { KneeCriteria, LatencySummary } from '../../src/result.js'

const criteria: KneeCriteria = { ...defaultKneeCriteria, startRate: 100 }

function latency (p99Ms: number): LatencySummary {
  return { count: 100, meanMs: p99Ms / 4, p50Ms: p99Ms / 5, p90Ms: p99Ms / 2, p95Ms: p99Ms / 1.5, p99Ms, maxMs: p99Ms * 1.2 }
}

/**
 * A synthetic service that keeps up to 250/s (the ramp article's knee with bcrypt):
 * below it, achieved = offered and p99 is low; above it, achieved stays at 250 and
 * latency climbs as the queue grows.
 */
function measureSynthetic (offered: number, index: number): MeasuredStep {
  const capacity = 250
  const over = offered > capacity
  return {
    index,
    offeredPerSecond: offered,
    achievedPerSecond: over ? capacity : offered * 0.995,
    latency: latency(over ? 50 + (offered - capacity) * 200 : 35),
    errorRate: 0,
    dropped: 0,
    startT: index * 10,
    endT: index * 10 + 10,
  }
}

describe('knee detection', () => {
  it('finds the last rate that held on a service that tops out at 250/s', async () => {
    const knee = await searchKnee(criteria, Number.POSITIVE_INFINITY, async (offered, index) => measureSynthetic(offered, index))
    // 100, 110, 121, 133.1, 146.41, 161.05, 177.16, 194.87, 214.36, 235.79, 259.37 ...
    assert.equal(knee.kneePerSecond, 235.79)
    const last = knee.steps.at(-1)
    assert.equal(knee.steps.length, 11)
    assert.equal(last?.offeredPerSecond, 259.37)
    assert.equal(last?.held, false)
    assert.ok(last?.failedBecause.some((reason) => reason.startsWith('p99')), 'p99 over the limit is named')
    assert.match(knee.stoppedBecause, /^step 11 \(259\.37\/s\) did not hold: p99/)
  })

  it('stops at the step count, or before a rate above the highest asked for', async () => {
    const byCount = await searchKnee({ ...criteria, maxSteps: 4 }, Number.POSITIVE_INFINITY, async (offered, index) => measureSynthetic(offered, index))
    assert.deepEqual(byCount.steps.map((step) => step.offeredPerSecond), [100, 110, 121, 133.1])
    assert.equal(byCount.stoppedBecause, 'reached 4 steps without falling behind')
    const byRate = await searchKnee({ ...criteria, startRate: 10, stepFactor: 1 }, 50, async (offered, index) => measureSynthetic(offered, index))
    assert.deepEqual(byRate.steps.map((step) => step.offeredPerSecond), [10, 20, 40])
    assert.equal(byRate.kneePerSecond, 40)
    assert.equal(byRate.stoppedBecause, 'reached the highest rate asked for (50/s) without falling behind')
  })

  it('fails a step that falls behind by more than the margin, naming the numbers', () => {
    const step = judgeStep({ ...measureSynthetic(100, 0), achievedPerSecond: 85 }, criteria)
    assert.equal(step.held, false)
    assert.match(step.failedBecause[0] ?? '', /achieved 85\.0\/s < 90\.0\/s/)
    assert.equal(judgeStep({ ...measureSynthetic(100, 0), achievedPerSecond: 91 }, criteria).held, true)
  })

  it('fails a step whose error rate passes the limit', () => {
    const step = judgeStep({ ...measureSynthetic(100, 0), errorRate: 0.05 }, criteria)
    assert.deepEqual(step.failedBecause, ['error rate 5.0 % > 1.0 %'])
  })

  it('has no knee when the first step already fails', () => {
    const first = judgeStep({ ...measureSynthetic(100, 0), errorRate: 1 }, criteria)
    assert.equal(kneeOf([first]), null)
  })

  it('stops at the first failure even when a later step would pass', () => {
    const steps = [100, 110, 121].map((rate, index) => judgeStep(measureSynthetic(rate, index), criteria))
    steps[1] = { ...(steps[1] as NonNullable<(typeof steps)[number]>), held: false }
    assert.equal(kneeOf(steps), 100)
  })
})
