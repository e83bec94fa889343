/**
 * How much longer queued requests really wait than the queue model predicts, learnt from their
 * sojourn (as CoDel watches it): the model sees run times, not a busy main thread, descheduled
 * threads or, for a hash, the verifies that overtake it. One figure per kind, as only hashes are
 * overtaken: the mean ratio plus two mean deviations (Jacobson's estimator), read by the bad cases.
 */
import type { HashTaskKind } from '../types.js'

/** Weight of the newest measured/predicted wait ratio in its running mean: ~the last 20 matter. */
const ratioWeight = 0.1
/** Weight of the newest deviation from that mean in the running mean deviation (Jacobson's RTT estimator uses 1/4). */
const deviationWeight = 0.25
/** The calibration is the mean ratio plus this many mean deviations: most requests wait no longer than it says. */
const deviations = 2
/** The calibration never scales the model by more than this (nor below 1). */
const calibrationBound = 4
/** How far toward 1 a calibration moves per request predicted and waiting under a run, or a high one would never come down. */
const fadeWeight = 0.02

/** Weight of the newest run time in the running mean: ~the last 10 runs matter. */
const runWeight = 0.2

/** A running mean of run times with `runMs` added: the first run seeds it, each later one weighs `runWeight`. */
export function nextMeanRunMs (meanRunMs: number, runMs: number): number {
  return meanRunMs === 0 ? runMs : meanRunMs + runWeight * (runMs - meanRunMs)
}

export class WaitCalibration {
  /** The factor predictions of each kind are scaled by, 1 to `calibrationBound`. */
  readonly factor: Record<HashTaskKind, number> = { verify: 1, hash: 1 }
  /** The running mean of measured/predicted wait ratios by kind (never below 1), and their running mean deviation. */
  private readonly ratio: Record<HashTaskKind, { mean: number, deviation: number }> = { verify: { mean: 1, deviation: 0 }, hash: { mean: 1, deviation: 0 } }

  /** A request of `kind` left the queue after `waitedMs`, predicted `predictedMs`; both under a run is noise, and the factor fades. */
  learn (kind: HashTaskKind, predictedMs: number, waitedMs: number, meanRunMs: number): void {
    const learnt = this.ratio[kind]
    if (predictedMs < meanRunMs && waitedMs <= meanRunMs) {
      learnt.mean -= fadeWeight * (learnt.mean - 1)
      learnt.deviation -= fadeWeight * learnt.deviation
    } else {
      // A short prediction that waited longer than a run is a lesson, measured against one run.
      const ratio = Math.min(calibrationBound, waitedMs / Math.max(predictedMs, meanRunMs))
      learnt.deviation += deviationWeight * (Math.abs(ratio - learnt.mean) - learnt.deviation)
      // Never below the model: requests ahead that left early (expired, cancelled, evicted) make
      // later ones wait less than predicted, and learning that would admit more, then expire more.
      learnt.mean = Math.max(1, learnt.mean + ratioWeight * (ratio - learnt.mean))
    }
    this.factor[kind] = Math.min(calibrationBound, learnt.mean + deviations * learnt.deviation)
  }
}
