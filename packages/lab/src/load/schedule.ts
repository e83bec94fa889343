/**
 * Load schedules as pure functions of time, testable without a clock. Stages follow k6: each moves
 * its target linearly from the previous stage's target (or the start value) to its own.
 */
import type { Stage } from '../result.js'

export function totalDurationMs (stages: readonly Stage[]): number {
  return stages.reduce((sum, stage) => sum + stage.durationMs, 0)
}

/** The stage's target at `tMs` after the start, interpolated linearly from `start`; the last target after the end. */
export function targetAt (stages: readonly Stage[], tMs: number, start = 0): number {
  let from = start
  let stageStart = 0
  for (const stage of stages) {
    if (tMs < stageStart + stage.durationMs) {
      const progress = Math.max(0, tMs - stageStart) / stage.durationMs
      return from + (stage.target - from) * progress
    }
    from = stage.target
    stageStart += stage.durationMs
  }
  return from
}

/** Virtual users wanted at `tMs`, ramping from `startVus` (k6's ramping-vus rounds down). */
export function vusAt (stages: readonly Stage[], tMs: number, startVus = 0): number {
  return Math.floor(targetAt(stages, tMs, startVus) + 1e-9)
}

/**
 * Of `total` virtual users numbered 0..total-1, how many belong to shard `shard`
 * of `shards` when user i goes to shard i mod shards.
 */
export function shareOf (total: number, shard: number, shards: number): number {
  return total <= shard ? 0 : Math.floor((total - shard - 1) / shards) + 1
}

/**
 * Intended arrival times (ms from the start) of an open model whose rate moves
 * linearly through the stages. Within a stage of duration d going from rate r0
 * to r1, arrivals so far are N(t) = r0·t + (r1 − r0)·t²/(2d) (t in seconds); the
 * k-th arrival is due when the running count reaches k, so a constant 10/s gives
 * arrivals at 0, 100, 200 ... ms and a ramp packs them ever closer.
 */
export function * arrivalTimes (startRate: number, stages: readonly Stage[]): Generator<number> {
  let stageStartMs = 0
  let rateFrom = startRate
  // Arrivals due before this stage, and the (fractional) count at its start.
  let countAtStageStart = 0
  let next = 0
  for (const stage of stages) {
    const d = stage.durationMs / 1000
    const r0 = rateFrom
    const r1 = stage.target
    const a = (r1 - r0) / (2 * d)
    const countAtStageEnd = countAtStageStart + r0 * d + a * d * d
    while (next < countAtStageEnd - 1e-9) {
      const k = next - countAtStageStart
      // Solve a·t² + r0·t − k = 0 for the smallest t >= 0.
      let t: number
      if (Math.abs(a) < 1e-12) {
        t = r0 > 0 ? k / r0 : d
      } else {
        const disc = r0 * r0 + 4 * a * k
        t = (-r0 + Math.sqrt(Math.max(0, disc))) / (2 * a)
      }
      yield stageStartMs + Math.min(d, Math.max(0, t)) * 1000
      next++
    }
    countAtStageStart = countAtStageEnd
    stageStartMs += stage.durationMs
    rateFrom = r1
  }
}
