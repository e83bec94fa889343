/**
 * The search, apart from the measuring: given the candidates cheapest first and a `measure`
 * that says how long one costs, find the one whose time is nearest the target. Time grows with
 * a candidate's cost (candidates.ts), about linearly, so each step interpolates between the
 * nearest measurements below and above the target, inside that bracket; a step that does not
 * halve the bracket is followed by a bisection, so a noisy or crooked clock still ends. A
 * candidate that a quick measurement puts within the tolerance is measured again for longer
 * (`confirm`) before it is taken. Every candidate it may return is one of the list, so the
 * list's bounds (OWASP's minimum, the memory budget) hold whatever the clock says.
 */
import type { HashParams } from '../hashing/index.js'
import { candidateCost } from './candidates.js'

export interface SearchOptions {
  /** Candidates, cheapest first (candidateLadder). */
  ladder: readonly HashParams[]
  targetMs: number
  /** Done when a measurement is within this share of the target: 0.1 is ±10 %. */
  tolerance: number
  /** The most measurements it makes, confirmations included. */
  maxMeasurements: number
  /** How long one hash of `hash` takes, in ms, as the caller measures it (all threads busy). */
  measure: (hash: HashParams) => Promise<number>
  /** A longer measurement of a candidate the quick one put within the tolerance; default: none. */
  confirm?: ((hash: HashParams) => Promise<number>) | undefined
}

/**
 * `target`: a candidate within the tolerance (confirmed). `closest`: none was (the steps between
 * candidates are coarser than the tolerance, as bcrypt's doublings, or the measurements ran
 * out); the nearest measured. `minimum-too-slow`: the cheapest candidate, OWASP's minimum, is
 * already slower than the target. `maximum-too-fast`: the dearest candidate that fits is still faster.
 */
export type SearchOutcome = 'target' | 'closest' | 'minimum-too-slow' | 'maximum-too-fast'

export interface Measurement {
  hash: HashParams
  ms: number
  kind: 'quick' | 'confirm'
}

export interface SearchResult {
  outcome: SearchOutcome
  chosen: HashParams
  /** The chosen candidate's latest measurement (its confirmation, when it had one). */
  ms: number
  /** Every measurement, in the order made. */
  measurements: Measurement[]
}

/** The index whose cost is nearest `cost`, kept inside [low, high]. */
function nearestIndex (ladder: readonly HashParams[], cost: number, low: number, high: number): number {
  let best = low
  for (let i = low; i <= high; i++) {
    const candidate = ladder[i]
    const current = ladder[best]
    if (candidate === undefined || current === undefined) continue
    if (Math.abs(candidateCost(candidate) - cost) < Math.abs(candidateCost(current) - cost)) best = i
  }
  return best
}

export async function searchParameters ({ ladder, targetMs, tolerance, maxMeasurements, measure, confirm }: SearchOptions): Promise<SearchResult> {
  if (ladder.length === 0) throw new RangeError('no candidate to search: the ladder is empty')
  if (!(targetMs > 0) || !(tolerance > 0) || !(maxMeasurements >= 1)) throw new RangeError('targetMs, tolerance and maxMeasurements must be positive')
  const measurements: Measurement[] = []
  /** Each measured candidate's latest time, by its index in the ladder. */
  const timeOf = new Map<number, number>()
  const within = (ms: number): boolean => Math.abs(ms - targetMs) <= tolerance * targetMs
  const record = (index: number, ms: number, kind: Measurement['kind']): number => {
    measurements.push({ hash: ladder[index] as HashParams, ms, kind })
    timeOf.set(index, ms)
    return ms
  }
  /** Measures a candidate (and confirms it when the quick look is within the tolerance): its time. */
  const judge = async (index: number): Promise<number> => {
    const ms = record(index, await measure(ladder[index] as HashParams), 'quick')
    if (!within(ms) || confirm === undefined || measurements.length >= maxMeasurements) return ms
    return record(index, await confirm(ladder[index] as HashParams), 'confirm')
  }
  const result = (outcome: SearchOutcome, index: number): SearchResult => ({ outcome, chosen: ladder[index] as HashParams, ms: timeOf.get(index) as number, measurements })
  const cost = (index: number): number => candidateCost(ladder[index] as HashParams)

  const first = await judge(0)
  if (within(first)) return result('target', 0)
  if (first > targetMs) return result('minimum-too-slow', 0)
  const top = ladder.length - 1
  /** Below: the dearest candidate measured faster than the target; above: the cheapest measured slower (none yet: undefined). */
  let below = 0
  let above: number | undefined
  let bisectNext = false
  while (measurements.length < maxMeasurements) {
    let next: number
    if (above === undefined) {
      if (below === top) return result('maximum-too-fast', top)
      // Time grows about in proportion to cost: aim straight at the target from the last one below.
      next = nearestIndex(ladder, cost(below) * targetMs / (timeOf.get(below) as number), below + 1, top)
    } else {
      if (above - below <= 1) break
      const lowMs = timeOf.get(below) as number
      const highMs = timeOf.get(above) as number
      const aim = cost(below) + (targetMs - lowMs) * (cost(above) - cost(below)) / Math.max(highMs - lowMs, 1e-9)
      next = bisectNext ? Math.floor((below + above) / 2) : nearestIndex(ladder, aim, below + 1, above - 1)
    }
    const width = above === undefined ? undefined : above - below
    const ms = await judge(next)
    if (within(ms)) return result('target', next)
    if (ms < targetMs) below = next
    else above = next
    // A step that left more than half of the bracket is followed by a bisection.
    bisectNext = width !== undefined && above !== undefined && above - below > width / 2 && !bisectNext
  }
  if (above === undefined && below === top) return result('maximum-too-fast', top)
  let best = 0
  for (const [index, ms] of timeOf) {
    if (Math.abs(ms - targetMs) < Math.abs((timeOf.get(best) as number) - targetMs)) best = index
  }
  return result('closest', best)
}
