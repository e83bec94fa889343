/**
 * The parameters calibration may choose, cheapest first: each at or above OWASP's minimum
 * (minimums.ts), each within one thread's share of the memory budget and the fixed bounds on
 * hashes (hashing/limits). For a given cost, the most memory: memory is what slows an attacker's
 * GPU or ASIC, so a cost is reached with the most memory that fits, then more passes (RFC 9106 §4).
 */
import { hashLimits, type HashAlgorithm, type HashParams } from '../hashing/index.js'
import { argon2MinimumMemoryKiB, bcryptMinimumCost, owaspMinimum, scryptMinimum } from './minimums.js'

const KiB = 1024

/** Work one hash does, in arbitrary units that grow as its time does: argon2 m·t, scrypt N·r·p, bcrypt 2^cost. */
export function candidateCost (hash: HashParams): number {
  switch (hash.algorithm) {
    case 'argon2id': return hash.params.memoryKiB * hash.params.timeCost
    case 'bcrypt': return 2 ** hash.params.cost
    case 'scrypt': return hash.params.N * hash.params.r * hash.params.p
  }
}

interface Rung {
  memory: number
  passes: number
}

interface RungLimits {
  /** The least memory OWASP accepts at this many passes. */
  minMemory: (passes: number) => number
  maxMemory: number
  step: number
  maxPasses: number
}

/**
 * For each number of passes, memory from where the previous passes' most expensive rung ends
 * (or from the floor) up to the most that fits: memory × passes rises with no gap or overlap.
 */
function memoryThenPasses ({ minMemory, maxMemory, step, maxPasses }: RungLimits): Rung[] {
  const top = Math.floor(maxMemory / step) * step
  const rungs: Rung[] = []
  let lastCost = 0
  for (let passes = 1; passes <= maxPasses; passes++) {
    const floor = minMemory(passes)
    if (floor > top) continue
    const fromPrevious = rungs.length === 0 ? floor : Math.max(floor, Math.ceil((passes - 1) * top / passes))
    for (let memory = Math.ceil(fromPrevious / step) * step; memory <= top; memory += step) {
      if (memory * passes <= lastCost) continue
      rungs.push({ memory, passes })
      lastCost = memory * passes
    }
  }
  return rungs
}

/** The candidates for `algorithm` when one hash may hold `perHashBytes`, cheapest first; empty when not even OWASP's minimum fits. */
export function candidateLadder (algorithm: HashAlgorithm, perHashBytes: number): HashParams[] {
  switch (algorithm) {
    case 'argon2id': {
      const rungs = memoryThenPasses({
        minMemory: argon2MinimumMemoryKiB,
        maxMemory: Math.min(Math.floor(perHashBytes / KiB), hashLimits.argon2.memoryKiB.max),
        step: KiB, // 1 MiB
        maxPasses: hashLimits.argon2.timeCost.max,
      })
      const ladder: HashParams[] = rungs.map(({ memory, passes }) => ({ algorithm, params: { memoryKiB: memory, timeCost: passes, parallelism: 1 } }))
      // OWASP's first setting (19 MiB, 2 passes) is a little cheaper than 46 MiB in one pass: the floor when it fits.
      const first = owaspMinimum('argon2id')
      const firstRung = ladder[0]
      if (firstRung !== undefined && candidateCost(first) < candidateCost(firstRung) && first.algorithm === 'argon2id' && first.params.memoryKiB * KiB <= perHashBytes) ladder.unshift(first)
      return ladder
    }
    case 'scrypt': {
      const { N } = scryptMinimum
      const maxBytes = Math.min(perHashBytes, hashLimits.scrypt.memoryBytes.max)
      return memoryThenPasses({
        minMemory: () => scryptMinimum.r,
        maxMemory: Math.min(Math.floor(maxBytes / (128 * N)), hashLimits.scrypt.r.max),
        step: 1,
        maxPasses: hashLimits.scrypt.p.max,
      }).map(({ memory, passes }) => ({ algorithm, params: { N, r: memory, p: passes } }))
    }
    case 'bcrypt': {
      const costs: HashParams[] = []
      for (let cost = bcryptMinimumCost; cost <= hashLimits.bcrypt.cost.max; cost++) costs.push({ algorithm, params: { cost } })
      return costs
    }
  }
}
