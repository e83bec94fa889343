/** The machine a result was measured on: every report prints it. */
import os from 'node:os'
import { detectCpuBudget } from '../hashing/index.js'
import { packageVersion } from '../paths.js'
import type { MachineInfo } from './result.js'

export function machineInfo (): MachineInfo {
  const budget = detectCpuBudget()
  return {
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown CPU',
    cores: os.cpus().length,
    cpuBudget: { cpus: budget.cpus, quota: budget.quota ?? null, source: budget.source },
    memoryBytes: os.totalmem(),
    node: process.version,
    platform: os.platform(),
    arch: os.arch(),
    tollboothVersion: packageVersion,
  }
}
