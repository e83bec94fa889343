/** The machine a result was measured on: every report prints it. The CPU budget is the one the service would see (tollbooth/launcher). */
import os from 'node:os'
import { machineFacts } from 'tollbooth/launcher'
import type { MachineInfo } from './result.js'

export function machineInfo (): MachineInfo {
  const facts = machineFacts()
  return {
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown CPU',
    cores: os.cpus().length,
    cpuBudget: facts.cpuBudget,
    memoryBytes: os.totalmem(),
    node: process.version,
    platform: os.platform(),
    arch: os.arch(),
    tollboothVersion: facts.serviceVersion,
  }
}
