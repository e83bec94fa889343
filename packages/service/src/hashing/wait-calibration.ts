/**
 * How much longer queued requests really wait than the queue model predicts (1: the model is
 * right), learnt from their sojourn as CoDel watches it. The model sees only run times measured
 * in the workers, not a busy main thread, descheduled threads, or, for a hash, the verifies that
 * overtake it; so admission under contention would admit requests that then expire.
 *
 * One per kind: registrations are overtaken by logins, a login never is, and a shared figure
 * would lengthen every login's expected wait. The figure is the mean ratio plus two mean
 * deviations (Jacobson's round-trip timeout estimator), so a noisy machine is read by its bad cases.
 */
import type { HashTaskKind } from './types.js'

/** Weight of the newest measured/predicted wait ratio in its running mean: ~the last 20 matter. */
const ratioWeight = 0.1
/** Weight of the newest deviation from that mean in the running mean deviation (Jacobson's RTT estimator uses 1/4). */
const deviationWeight = 0.25
/** The calibration is the mean ratio plus this many mean deviations: most requests wait no longer than it says. */
const deviations = 2
/** The calibration never scales the model by more than this (nor below 1). */
const calibrationBound = 4
/**
 * How far toward 1 a calibration moves for each request whose prediction and wait are both under
 * a run (which teach nothing else): a high calibration admits only such requests, and without the
 * fade would never learn the machine is quick again.
 */
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

  /**
   * A request of `kind` left the queue after `waitedMs`, predicted to wait `predictedMs`, when a
   * run took `meanRunMs`. A prediction under one run whose wait was under one run too is mostly
   * the noise of a thread about to free: it teaches nothing, and the factor fades toward 1.
   */
  learn (kind: HashTaskKind, predictedMs: number, waitedMs: number, meanRunMs: number): void {
    const learnt = this.ratio[kind]
    if (predictedMs < meanRunMs && waitedMs <= meanRunMs) {
      learnt.mean -= fadeWeight * (learnt.mean - 1)
      learnt.deviation -= fadeWeight * learnt.deviation
    } else {
      // A short prediction that waited longer than a run (an expiry, on a starved machine) is a
      // lesson, measured against one run: the noise of a thread about to free is smaller than that.
      const ratio = Math.min(calibrationBound, waitedMs / Math.max(predictedMs, meanRunMs))
      learnt.deviation += deviationWeight * (Math.abs(ratio - learnt.mean) - learnt.deviation)
      // Never below the model: requests ahead that left early (expired, cancelled, evicted) make
      // later ones wait less than predicted, and learning that would admit more, then expire more.
      learnt.mean = Math.max(1, learnt.mean + ratioWeight * (ratio - learnt.mean))
    }
    this.factor[kind] = Math.min(calibrationBound, learnt.mean + deviations * learnt.deviation)
  }
}
