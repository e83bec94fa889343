/**
 * CPU seconds from /proc (Linux): of a process and of its main thread, and of an embedded
 * PostgreSQL (its postmaster and the backends it started). Read around a measured window, they
 * split a request's cost by where it ran.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'

export const clockTicksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())

/** The fields of a /proc stat line after the command name (which may hold spaces): [0] is the state. */
function statFields (stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
}

/** utime + stime of a /proc stat file, in seconds. */
function statCpuSeconds (statPath: string): number {
  const fields = statFields(fs.readFileSync(statPath, 'utf8'))
  return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond
}

export interface ProcessCpu {
  /** The whole process, its ended threads included. */
  total: number
  /** Its main thread (tid = pid). */
  main: number
}

export function processCpu (pid: number): ProcessCpu {
  return { total: statCpuSeconds(`/proc/${pid}/stat`), main: statCpuSeconds(`/proc/${pid}/task/${pid}/stat`) }
}

/** CPU seconds so far of the PostgreSQL listening on `port`: its postmaster (`postgres -D dir -p port`) and the postmaster's children. */
export function postgresCpuSeconds (port: string): number {
  const processes = new Map<number, { ppid: number, ticks: number, args: string[] }>()
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const fields = statFields(fs.readFileSync(`/proc/${entry}/stat`, 'utf8'))
      processes.set(Number(entry), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), args: fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0') })
    } catch {} // the process ended between the listing and the read
  }
  const postmaster = [...processes].find(([, { args }]) => args.some((arg, i) => arg === '-p' && args[i + 1] === port) && args.includes('-D'))?.[0]
  if (postmaster === undefined) return 0
  let ticks = 0
  for (const [pid, { ppid, ticks: own }] of processes) if (pid === postmaster || ppid === postmaster) ticks += own
  return ticks / clockTicksPerSecond
}
