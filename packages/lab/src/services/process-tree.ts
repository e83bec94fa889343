/**
 * CPU and memory of a process and every process below it, from /proc (Linux): what its own
 * process_cpu_seconds_total cannot see. Reaped children count through their parent's cutime/cstime.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'

let systemUnits: { clockTicksPerSecond: number, pageBytes: number } | null | undefined

/** /proc counts CPU in clock ticks and memory in pages: their sizes, asked of the system once (null: unknown). */
function procUnits (): { clockTicksPerSecond: number, pageBytes: number } | null {
  const getconf = (name: string): number => Number(execFileSync('getconf', [name], { encoding: 'utf8' }).trim())
  try {
    if (systemUnits === undefined) systemUnits = { clockTicksPerSecond: getconf('CLK_TCK'), pageBytes: getconf('PAGESIZE') }
  } catch {
    systemUnits = null
  }
  return systemUnits !== null && systemUnits.clockTicksPerSecond > 0 && systemUnits.pageBytes > 0 ? systemUnits : null
}

export interface ProcessTreeUsage {
  /** utime + stime + cutime + cstime of every live process of the tree, in seconds. */
  cpuSeconds: number
  rssBytes: number
  processes: number
}

interface ProcStat {
  ppid: number
  cpuTicks: number
  rssPages: number
}

function readStat (pid: string): ProcStat | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    const number = (index: number): number => Number(fields[index] ?? 0)
    // Field numbers from proc(5), minus 3: state is field 3.
    return { ppid: number(1), cpuTicks: number(11) + number(12) + number(13) + number(14), rssPages: number(21) }
  } catch {
    return undefined // gone between readdir and read: normal
  }
}

/** Null when /proc is not there, the process is gone, or the system did not say its units. */
export function processTreeUsage (rootPid: number): ProcessTreeUsage | null {
  const units = procUnits()
  let entries: string[]
  try {
    entries = fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))
  } catch {
    return null
  }
  const stats = new Map<number, ProcStat>()
  const children = new Map<number, number[]>()
  for (const entry of entries) {
    const stat = readStat(entry)
    if (stat === undefined) continue
    stats.set(Number(entry), stat)
    children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), Number(entry)])
  }
  if (units === null || !stats.has(rootPid)) return null
  const usage = { cpuTicks: 0, rssPages: 0, processes: 0 }
  for (const queue = [rootPid]; queue.length > 0;) {
    const pid = queue.pop() as number
    const stat = stats.get(pid)
    if (stat === undefined) continue
    usage.cpuTicks += stat.cpuTicks
    usage.rssPages += stat.rssPages
    usage.processes++
    queue.push(...(children.get(pid) ?? []))
  }
  return { cpuSeconds: usage.cpuTicks / units.clockTicksPerSecond, rssBytes: usage.rssPages * units.pageBytes, processes: usage.processes }
}

/** The parent of a process (a PostgreSQL backend's is its postmaster); null when /proc does not have it. */
export function parentPid (pid: number): number | null {
  const stat = readStat(String(pid))
  return stat === undefined || stat.ppid <= 0 ? null : stat.ppid
}
