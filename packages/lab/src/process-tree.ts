/**
 * CPU and memory of a process and every process below it, read from /proc
 * (Linux): what a service really costs when it spawns a child per hash or forks
 * cluster workers, which its own process_cpu_seconds_total cannot see. Children
 * that already exited count too: the kernel adds a reaped child's CPU to its
 * parent's cutime/cstime.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'

let systemUnits: { clockTicksPerSecond: number, pageBytes: number } | null | undefined

/** /proc counts CPU in clock ticks and memory in pages: their sizes, asked of the system once (null: unknown). */
export function procUnits (): { clockTicksPerSecond: number, pageBytes: number } | null {
  if (systemUnits !== undefined) return systemUnits
  const getconf = (name: string): number => Number(execFileSync('getconf', [name], { encoding: 'utf8' }).trim())
  try {
    const units = { clockTicksPerSecond: getconf('CLK_TCK'), pageBytes: getconf('PAGESIZE') }
    systemUnits = units.clockTicksPerSecond > 0 && units.pageBytes > 0 ? units : null
  } catch {
    systemUnits = null
  }
  return systemUnits
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
  let entries: string[]
  const units = procUnits()
  if (units === null) return null
  try {
    entries = fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))
  } catch {
    return null
  }
  const stats = new Map<number, ProcStat>()
  for (const entry of entries) {
    const stat = readStat(entry)
    if (stat !== undefined) stats.set(Number(entry), stat)
  }
  if (!stats.has(rootPid)) return null
  const children = new Map<number, number[]>()
  for (const [pid, stat] of stats) {
    const list = children.get(stat.ppid) ?? []
    list.push(pid)
    children.set(stat.ppid, list)
  }
  let cpuTicks = 0
  let rssPages = 0
  let processes = 0
  const queue = [rootPid]
  while (queue.length > 0) {
    const pid = queue.pop() as number
    const stat = stats.get(pid)
    if (stat === undefined) continue
    cpuTicks += stat.cpuTicks
    rssPages += stat.rssPages
    processes++
    queue.push(...(children.get(pid) ?? []))
  }
  return { cpuSeconds: cpuTicks / units.clockTicksPerSecond, rssBytes: rssPages * units.pageBytes, processes }
}
