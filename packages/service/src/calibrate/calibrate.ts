/**
 * `tollbooth calibrate`'s work: the candidates that fit one thread's share of the memory budget,
 * the search over them with every hash thread busy, and one longer measurement of the choice,
 * collected into one object (report.ts renders it).
 */
import os from 'node:os'
import { createError } from '../errors.js'
import { detectCpuBudget, formatBytes, hashMemoryBytes, type CpuBudget, type HashAlgorithm, type HashParams } from '../hashing/index.js'
import { candidateLadder } from './candidates.js'
import { measurePool, type PoolMeasurement } from './measure-pool.js'
import { argon2MinimumMemoryKiB, owaspMinimum, scryptMinimum } from './minimums.js'
import { searchParameters, type Measurement, type SearchOutcome } from './search.js'

/** Measurements agree with the target within ±10 %: half the ±20 % an independent check is held to. */
const tolerance = 0.1
const maxMeasurements = 14
/** Verifies per thread in a search step, and in the final measurement of the choice. */
const searchRounds = 4
const finalRounds = 10

export interface CalibrateOptions {
  algorithm: HashAlgorithm
  targetMs: number
  threads: number
  memoryBudget: { bytes: number, origin: string }
  /** Told each measurement of the search as it is made (the CLI shows progress). */
  onMeasurement?: ((measurement: Measurement) => void) | undefined
}

export interface Calibration {
  algorithm: HashAlgorithm
  targetMs: number
  tolerance: number
  threads: number
  memoryBudget: { bytes: number, origin: string, perHashBytes: number }
  outcome: SearchOutcome
  chosen: HashParams
  /** The search's quick measurements, in order. */
  measurements: Measurement[]
  /** The choice measured for longer (its confirmation, or once more): the figures to print. */
  final: PoolMeasurement
  /** Threads × one hash's memory: what the pool holds with every thread busy. */
  fullConcurrencyBytes: number
  /** `loadAverage`: the 1-minute load average before measuring; other work on the cores slows every measurement. */
  machine: { cpuModel: string, cores: number, cpuBudget: CpuBudget, node: string, platform: string, loadAverage: number }
}

/** The least memory one hash of `algorithm` holds at OWASP's minimum (its most-passes equivalent for argon2id). */
function leastMemoryBytes (algorithm: HashAlgorithm): { bytes: number, setting: string } {
  switch (algorithm) {
    case 'argon2id': return { bytes: argon2MinimumMemoryKiB(5) * 1024, setting: `m=${argon2MinimumMemoryKiB(5)} t=5` }
    case 'scrypt': return { bytes: 128 * scryptMinimum.N * scryptMinimum.r, setting: `N=${scryptMinimum.N} r=${scryptMinimum.r}` }
    case 'bcrypt': return { bytes: hashMemoryBytes(owaspMinimum('bcrypt')), setting: 'cost 10' }
  }
}

export async function calibrate (options: CalibrateOptions, measure = measurePool): Promise<Calibration> {
  const { algorithm, targetMs, threads, memoryBudget, onMeasurement } = options
  const loadAverage = os.loadavg()[0] ?? 0
  const perHashBytes = Math.floor(memoryBudget.bytes / threads)
  const ladder = candidateLadder(algorithm, perHashBytes)
  if (ladder.length === 0) {
    const least = leastMemoryBytes(algorithm)
    const fitting = Math.floor(memoryBudget.bytes / least.bytes)
    throw createError('CONFIG_INVALID', `the hash memory budget of ${formatBytes(memoryBudget.bytes)} (${memoryBudget.origin}) gives each of ${threads} hash threads ${formatBytes(perHashBytes)}, less than OWASP's least ${algorithm} memory (${least.setting}: ${formatBytes(least.bytes)}): ${fitting > 0 ? `use at most ${fitting} thread${fitting === 1 ? '' : 's'} (--threads), or ` : ''}a budget of at least ${formatBytes(threads * least.bytes)} (--memory)`, { field: 'memory' })
  }
  const measureOptions = { threads, memoryBudgetBytes: memoryBudget.bytes }
  /** Each candidate's latest long measurement: a confirmed choice's figures are printed as measured. */
  const longMeasurements = new Map<HashParams, PoolMeasurement>()
  const search = await searchParameters({
    ladder,
    targetMs,
    tolerance,
    maxMeasurements,
    measure: async (hash) => {
      const { medianMs } = await measure(hash, { ...measureOptions, rounds: searchRounds })
      onMeasurement?.({ hash, ms: medianMs, kind: 'quick' })
      return medianMs
    },
    confirm: async (hash) => {
      const long = await measure(hash, { ...measureOptions, rounds: finalRounds })
      longMeasurements.set(hash, long)
      onMeasurement?.({ hash, ms: long.medianMs, kind: 'confirm' })
      return long.medianMs
    },
  })
  const final = (search.outcome === 'target' ? longMeasurements.get(search.chosen) : undefined) ?? await measure(search.chosen, { ...measureOptions, rounds: finalRounds })
  return {
    algorithm,
    targetMs,
    tolerance,
    threads,
    memoryBudget: { ...memoryBudget, perHashBytes },
    outcome: search.outcome,
    chosen: search.chosen,
    measurements: search.measurements,
    final,
    fullConcurrencyBytes: threads * hashMemoryBytes(search.chosen),
    machine: { cpuModel: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, cpuBudget: detectCpuBudget(), node: process.version, platform: `${os.platform()} ${os.arch()}`, loadAverage },
  }
}
