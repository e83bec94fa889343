/**
 * What a bench prints first: the machine it ran on (CPU model, cores, the CPU budget the service
 * would size itself to, whether the scheduler groups processes by session, Node), so its figures
 * are never read without it.
 */
import os from 'node:os'
import { machineFacts } from 'tollbooth/launcher'

export function machineLine (): string {
  const { cpuBudget, schedulerAutogroups } = machineFacts()
  const autogroups = schedulerAutogroups === null ? '' : `, scheduler autogroups ${schedulerAutogroups ? 'ON (nice counts only inside a session: packages/service/bench/README.md)' : 'off'}`
  return `${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${os.cpus().length} cores, CPU budget ${cpuBudget.cpus} (${cpuBudget.source})${autogroups}, Node ${process.version}`
}
