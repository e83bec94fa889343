/**
 * How much longer queued requests really wait than the queue model predicts, learnt per kind
 * (1: the model is right). The model knows the run time measured inside a worker, not what it
 * cannot see: the main thread handing the next task over late on a busy machine, threads
 * descheduled between tasks, run times drifting faster than the mean follows, and, for a hash,
 * the verifies that arrive after it and go first. Scaling predictions by what queued requests
 * really waited (their sojourn, as CoDel watches) keeps admission honest under contention: a
 * request is admitted only if it is expected to start within its share of its deadline, so few
 * expire in the queue after waiting for nothing.
 *
 * One per kind: registrations overtaken by a stream of logins wait a multiple of what the queue
 * showed when they came, and that lesson is theirs; a shared one would lengthen every login's
 * expected wait with it, and a login is never overtaken. The figure is the running mean of the
 * ratios plus two running mean deviations (Jacobson's estimator of a round trip's timeout): a
 * noisy machine, where some requests wait twice what others do, is read by its bad cases.
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
 * How far toward 1 a calibration moves for each request that leaves the queue with a prediction
 * and a wait both under a run (which teach nothing). Without it, a high calibration, which admits
 * only requests predicted to start sooner than its share of the deadline over it, would never hear
 * that the machine is quick again: with hashes of over an eighth of the deadline (a half share
 * over the bound of 4), every admitted prediction is under a run and it would stay at its bound.
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
