/**
 * How much CPU this process really has, to size the hash pool. `os.availableParallelism()`
 * ignores a cgroup quota (a Kubernetes `limits.cpu`), where an oversized pool turns into
 * throttling (the k8s seed article). Synchronous: it runs once, reading a few pseudo-files.
 */
import os from 'node:os'
import path from 'node:path'
import { defaultCgroupRoot, defaultProcSelfCgroup, readMembership, readText, selfAndAncestors, v1Mount, type CgroupLocation } from './cgroup-files.js'

type CpuBudgetSource = 'cgroup-v2' | 'cgroup-v1' | 'affinity' | 'cores'

export interface CpuBudget {
  /** Whole CPUs this process may use, at least 1. */
  cpus: number
  /** The fractional quota where a cgroup sets one (e.g. 1.5), else undefined. */
  quota: number | undefined
  source: CpuBudgetSource
}

export type DetectCpuBudgetOptions = CgroupLocation

interface Quota {
  cpus: number
  source: 'cgroup-v2' | 'cgroup-v1'
}

/** v2 `cpu.max`: "max 100000" (no limit) or "150000 100000" (1.5 CPUs). */
function v2Quota (cgroupRoot: string, cgroupPath: string): number | undefined {
  let lowest: number | undefined
  for (const level of selfAndAncestors(cgroupPath)) {
    const text = readText(path.join(cgroupRoot, level, 'cpu.max'))
    if (text === undefined) continue
    const [quota, period] = text.trim().split(/\s+/)
    if (quota === undefined || quota === 'max') continue
    const cpus = Number(quota) / Number(period ?? '100000')
    if (Number.isFinite(cpus) && cpus > 0) lowest = Math.min(lowest ?? cpus, cpus)
  }
  return lowest
}

/** v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us` under the cpu controller's mount; -1 is "no limit". */
function v1Quota (cgroupRoot: string, controllers: string[], cgroupPath: string): number | undefined {
  // The mount is named after the co-mounted controllers (`cpu,cpuacct`), often with a `cpu` symlink.
  const mount = v1Mount(cgroupRoot, controllers, ['cpu', 'cpu,cpuacct', 'cpuacct,cpu'])
  if (mount === undefined) return undefined
  let lowest: number | undefined
  for (const level of selfAndAncestors(cgroupPath)) {
    const quota = Number(readText(path.join(mount, level, 'cpu.cfs_quota_us'))?.trim())
    const period = Number(readText(path.join(mount, level, 'cpu.cfs_period_us'))?.trim())
    if (!Number.isFinite(quota) || quota <= 0 || !Number.isFinite(period) || period <= 0) continue
    lowest = Math.min(lowest ?? quota / period, quota / period)
  }
  return lowest
}

function cgroupQuota (cgroupRoot: string, procSelfCgroup: string): Quota | undefined {
  const membership = readMembership(procSelfCgroup)
  const candidates: Quota[] = []
  // Without /proc/self/cgroup the hierarchy's root is still read: in a container it is the container's cgroup.
  const v2 = v2Quota(cgroupRoot, membership.unified ?? '/')
  if (v2 !== undefined) candidates.push({ cpus: v2, source: 'cgroup-v2' })
  const cpuLine = membership.v1.find((line) => line.controllers.includes('cpu'))
  const v1 = v1Quota(cgroupRoot, cpuLine?.controllers ?? ['cpu'], cpuLine?.path ?? '/')
  if (v1 !== undefined) candidates.push({ cpus: v1, source: 'cgroup-v1' })
  return candidates.reduce<Quota | undefined>((low, q) => (low === undefined || q.cpus < low.cpus ? q : low), undefined)
}

/** The smallest of the cgroup quota (v2, v1, every ancestor), the affinity mask and the core count; at least 1. */
export function detectCpuBudget (options: DetectCpuBudgetOptions = {}): CpuBudget {
  const { cgroupRoot = defaultCgroupRoot, procSelfCgroup = defaultProcSelfCgroup } = options
  const cores = Math.max(1, os.cpus().length)
  // Honours sched_setaffinity / taskset / cpuset on Linux.
  const affinity = Math.max(1, os.availableParallelism())
  let cpus = affinity
  let source: CpuBudgetSource = affinity < cores ? 'affinity' : 'cores'

  const quota = cgroupQuota(cgroupRoot, procSelfCgroup)
  if (quota !== undefined) {
    // Round a fractional quota UP (1.5 -> 2 threads), as the JVM, .NET and Go do: a quota is CPU
    // time, and 1 thread could never spend more than 1.0 of it. The price is CFS throttling at
    // saturation, which run times measured in the worker include, so admission sees it.
    const quotaCpus = Math.max(1, Math.ceil(quota.cpus))
    // On a tie the quota is named: it is the limit the operator set for this process.
    if (quotaCpus <= cpus) {
      cpus = quotaCpus
      source = quota.source
    }
  }
  return { cpus, quota: quota?.cpus, source }
}
