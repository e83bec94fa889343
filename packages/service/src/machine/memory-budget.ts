/**
 * How much memory this process may use, to bound what its hash threads hold at once. A
 * container's limit (cgroup v2 `memory.max`, v1 `memory.limit_in_bytes`) is far below the
 * machine's memory that `os.totalmem()` reports; past it the kernel kills the process. So the
 * hash threads get a share of the lowest limit (`hashShareOf`), and the rest is the process's own.
 */
import os from 'node:os'
import path from 'node:path'
import { defaultCgroupRoot, defaultProcSelfCgroup, readMembership, readText, selfAndAncestors, v1Mount, type CgroupLocation } from './cgroup-files.js'

type MemoryBudgetSource = 'cgroup-v2' | 'cgroup-v1' | 'machine'

export interface MemoryBudget {
  /** What the process may use: the lowest cgroup limit, or the machine's memory. */
  limitBytes: number
  source: MemoryBudgetSource
  /** What the hash threads may hold together by default: `defaultHashMemoryPercent` of the limit. */
  hashBytes: number
}

/**
 * The hash threads' default share of the limit, in percent. The rest is the process's own: its
 * heap, sockets, database pool, the worker threads' own heaps and glibc's kept arenas, and in a
 * container often a sidecar's or PostgreSQL's too. TOLLBOOTH_HASH_MEMORY_BUDGET sets another.
 */
export const defaultHashMemoryPercent = 50

/** `percent` of `limitBytes`, in whole bytes. */
export function hashShareOf (limitBytes: number, percent: number = defaultHashMemoryPercent): number {
  return Math.floor(limitBytes * percent / 100)
}

interface Limit {
  bytes: number
  source: 'cgroup-v2' | 'cgroup-v1'
}

/** A limit in bytes, or undefined for "max", v1's "no limit" (2^63 rounded to a page) and anything unreadable. */
function limitBytes (text: string | undefined, machineBytes: number): number | undefined {
  const trimmed = text?.trim()
  if (trimmed === undefined || trimmed === 'max' || !/^\d+$/.test(trimmed)) return undefined
  const bytes = Number(trimmed)
  // A limit at or above the machine's memory limits nothing (v1 writes 9223372036854771712 for none).
  return bytes > 0 && bytes < machineBytes ? bytes : undefined
}

function lowest (files: string[], machineBytes: number): number | undefined {
  let low: number | undefined
  for (const file of files) {
    const bytes = limitBytes(readText(file), machineBytes)
    if (bytes !== undefined) low = Math.min(low ?? bytes, bytes)
  }
  return low
}

function cgroupLimit (cgroupRoot: string, procSelfCgroup: string, machineBytes: number): Limit | undefined {
  const membership = readMembership(procSelfCgroup)
  const candidates: Limit[] = []
  // Without /proc/self/cgroup the hierarchy's root is still read: in a container it is the container's cgroup.
  const v2 = lowest(selfAndAncestors(membership.unified ?? '/').map((level) => path.join(cgroupRoot, level, 'memory.max')), machineBytes)
  if (v2 !== undefined) candidates.push({ bytes: v2, source: 'cgroup-v2' })
  const memoryLine = membership.v1.find((line) => line.controllers.includes('memory'))
  const mount = v1Mount(cgroupRoot, memoryLine?.controllers ?? ['memory'], ['memory'])
  if (mount !== undefined) {
    const v1 = lowest(selfAndAncestors(memoryLine?.path ?? '/').map((level) => path.join(mount, level, 'memory.limit_in_bytes')), machineBytes)
    if (v1 !== undefined) candidates.push({ bytes: v1, source: 'cgroup-v1' })
  }
  return candidates.reduce<Limit | undefined>((low, limit) => (low === undefined || limit.bytes < low.bytes ? limit : low), undefined)
}

/** The lowest memory limit (cgroup v2, v1, every ancestor, the machine) and the hash threads' share of it. */
export function detectMemoryBudget (options: CgroupLocation & { machineBytes?: number } = {}): MemoryBudget {
  const { cgroupRoot = defaultCgroupRoot, procSelfCgroup = defaultProcSelfCgroup, machineBytes = os.totalmem() } = options
  const limit = cgroupLimit(cgroupRoot, procSelfCgroup, machineBytes)
  const bytes = limit?.bytes ?? machineBytes
  return { limitBytes: bytes, source: limit?.source ?? 'machine', hashBytes: hashShareOf(bytes) }
}
