/**
 * The knee search (docs/how-to/run-the-lab.md, `lab knee`): the last offered rate that held. Pure: the steps come in measured.
 */
import type { KneeCriteria, KneeResult, KneeStep } from '../result.js'

export type MeasuredStep = Omit<KneeStep, 'held' | 'failedBecause'>

export const defaultKneeCriteria: Omit<KneeCriteria, 'startRate'> = {
  stepFactor: 0.1,
  stepDurationMs: 10_000,
  throughputMargin: 0.1,
  p99LimitMs: 1000,
  errorRateLimit: 0.01,
  maxSteps: 40,
}

/** Whether a step held, and if not, every reason why. */
export function judgeStep (step: MeasuredStep, criteria: KneeCriteria): KneeStep {
  const failedBecause: string[] = []
  const floor = step.offeredPerSecond * (1 - criteria.throughputMargin)
  if (step.achievedPerSecond < floor) {
    failedBecause.push(`achieved ${step.achievedPerSecond.toFixed(1)}/s < ${floor.toFixed(1)}/s (offered ${step.offeredPerSecond}/s − ${Math.round(criteria.throughputMargin * 100)} %)`)
  }
  if (step.latency.p99Ms !== null && step.latency.p99Ms > criteria.p99LimitMs) {
    failedBecause.push(`p99 ${Math.round(step.latency.p99Ms)} ms > ${criteria.p99LimitMs} ms`)
  }
  if (step.errorRate > criteria.errorRateLimit) {
    failedBecause.push(`error rate ${(step.errorRate * 100).toFixed(1)} % > ${(criteria.errorRateLimit * 100).toFixed(1)} %`)
  }
  return { ...step, held: failedBecause.length === 0, failedBecause }
}

/** The last offered rate that held before the first step that did not; null when the first failed. */
export function kneeOf (steps: readonly KneeStep[]): number | null {
  const failed = steps.findIndex((step) => !step.held)
  return steps[(failed === -1 ? steps.length : failed) - 1]?.offeredPerSecond ?? null
}

/**
 * The search: steps from `criteria.startRate`, × (1 + stepFactor) each, until one does not
 * hold, `maxSteps` ran, or the next rate passes `maxRate`. Each step is pushed into `steps` as
 * it is judged, so a caller that stops waiting (Ctrl-C) still has the steps so far.
 */
export async function searchKnee (
  criteria: KneeCriteria,
  maxRate: number,
  measureStep: (offeredPerSecond: number, index: number) => Promise<MeasuredStep>,
  steps: KneeStep[] = [],
  log: (line: string) => void = () => {}
): Promise<KneeResult> {
  const done = (stoppedBecause: string): KneeResult => ({ criteria, steps, kneePerSecond: kneeOf(steps), stoppedBecause })
  let rate = criteria.startRate
  for (let index = 0; index < criteria.maxSteps; index++) {
    if (rate > maxRate) return done(`reached the highest rate asked for (${maxRate}/s) without falling behind`)
    const offered = Math.round(rate * 100) / 100
    const step = judgeStep(await measureStep(offered, index), criteria)
    steps.push(step)
    log(`step ${index + 1}: offered ${offered}/s, achieved ${step.achievedPerSecond}/s, p99 ${step.latency.p99Ms ?? '—'} ms, errors ${(step.errorRate * 100).toFixed(1)} %: ${step.held ? 'held' : `fell behind (${step.failedBecause.join('; ')})`}`)
    if (!step.held) return done(`step ${index + 1} (${offered}/s) did not hold: ${step.failedBecause.join('; ')}`)
    rate *= 1 + criteria.stepFactor
  }
  return done(`reached ${criteria.maxSteps} steps without falling behind`)
}
