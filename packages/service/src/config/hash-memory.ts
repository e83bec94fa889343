/**
 * TOLLBOOTH_HASH_MEMORY_BUDGET: what the hash threads may hold together, as a share of the
 * process's memory limit (`50%`) or a size (`512MiB`, `2GiB`). Resolved at load against the
 * lowest of the cgroup limit and the machine's memory, then split between `--workers` processes;
 * a start whose threads × one hash's memory would not fit is refused here, naming what fits.
 */
import { createError } from '../errors.js'
import { describeMemoryMisfit, detectMemoryBudget, formatBytes, hashShareOf, poolMemoryMisfit, type HashPolicy, type MemoryBudget } from '../hashing/index.js'

export type HashMemorySpec = { percent: number } | { bytes: number }

const units: Readonly<Record<string, number>> = { '': 1, B: 1, KIB: 1024, MIB: 1024 ** 2, GIB: 1024 ** 3, TIB: 1024 ** 4 }

/** `50%` (1 to 100), `512MiB`, `2 GiB`, `1073741824` (bytes); CONFIG_INVALID otherwise. */
export function parseHashMemoryBudget (text: string): HashMemorySpec {
  const trimmed = text.trim()
  const percent = /^(\d+(?:\.\d+)?)\s*%$/.exec(trimmed)
  if (percent?.[1] !== undefined) {
    const value = Number(percent[1])
    if (value > 0 && value <= 100) return { percent: value }
  }
  const size = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(trimmed)
  const unit = units[(size?.[2] ?? 'x').toUpperCase()]
  if (size?.[1] !== undefined && unit !== undefined) {
    const bytes = Math.floor(Number(size[1]) * unit)
    if (bytes >= 1) return { bytes }
  }
  throw createError('CONFIG_INVALID', `TOLLBOOTH_HASH_MEMORY_BUDGET / --hash-memory-budget must be a share of the memory limit (1% to 100%, as 50%) or a size (512MiB, 2GiB, or bytes), got "${text}"`, { field: 'TOLLBOOTH_HASH_MEMORY_BUDGET' })
}

export interface HashMemoryBudget {
  /** What the hash threads of one process may hold together. */
  bytes: number
  /** Where it comes from, for messages: `50% of the cgroup-v1 memory limit (1 GiB)`. */
  origin: string
}

function limitName (limit: MemoryBudget): string {
  return limit.source === 'machine' ? `the machine's memory (${formatBytes(limit.limitBytes)})` : `the ${limit.source} memory limit (${formatBytes(limit.limitBytes)})`
}

/** The budget of the whole process tree, from the setting (named `settingName` in messages) and the detected limit. */
export function resolveHashMemoryBudget (spec: HashMemorySpec, settingName = 'TOLLBOOTH_HASH_MEMORY_BUDGET', limit: MemoryBudget = detectMemoryBudget()): HashMemoryBudget {
  if ('percent' in spec) return { bytes: hashShareOf(limit.limitBytes, spec.percent), origin: `${settingName}=${spec.percent}% of ${limitName(limit)}` }
  return { bytes: spec.bytes, origin: `${settingName}=${formatBytes(spec.bytes)}` }
}

/** How `serve --workers` splits a CPU budget (process/worker-budget.ts): processes, and hash threads in each. */
export interface HashProcesses {
  processes: number
  threadsPerProcess: number
}

/**
 * Refuses (CONFIG_INVALID) a start whose threads, each running the policy's hash at once, would
 * hold more than the budget; the message says what fits. Returns one process's share.
 */
export function checkHashMemory (policy: HashPolicy, budget: HashMemoryBudget, { processes, threadsPerProcess }: HashProcesses): number {
  const perProcessBytes = Math.floor(budget.bytes / processes)
  const misfit = poolMemoryMisfit(policy, threadsPerProcess, perProcessBytes)
  if (misfit === undefined) return perProcessBytes
  const shared = processes === 1 ? '' : `, shared by ${processes} worker processes (TOLLBOOTH_WORKERS): ${formatBytes(perProcessBytes)} each`
  throw createError('CONFIG_INVALID', describeMemoryMisfit(misfit, {
    threads: processes === 1 ? 'TOLLBOOTH_HASH_THREADS' : 'per worker: TOLLBOOTH_HASH_THREADS or TOLLBOOTH_WORKERS',
    budget: `the hash memory budget of ${formatBytes(budget.bytes)} (${budget.origin}${shared})`,
    argon2MemoryKiB: 'TOLLBOOTH_ARGON2_MEMORY_KIB',
    scryptN: 'TOLLBOOTH_SCRYPT_N',
    largerBudget: 'a larger TOLLBOOTH_HASH_MEMORY_BUDGET',
  }), { field: 'TOLLBOOTH_HASH_MEMORY_BUDGET' })
}
