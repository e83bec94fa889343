/**
 * A CPU quota for one process tree: a cgroup of its own with a CFS quota (v2 `cpu.max`, or
 * v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`), which the process joins before it execs so
 * the service's CPU detection (machine/cpu-budget.ts) sees the quota from its first line.
 * Needs root (or a delegated, writable cgroup filesystem); without, `createCpuQuota` says why
 * instead of failing, and the caller runs without quotas.
 */
import fs from 'node:fs'
import path from 'node:path'

export interface CpuQuotaGroup {
  kind: 'cgroup-v2' | 'cgroup-v1'
  /** The cgroup's folder. */
  dir: string
  /** Write a pid here to move that process (and its future children) into the group. */
  procsFile: string
  /** Removes the group; its processes must have exited. */
  remove (): void
}

export type CpuQuotaOutcome = { ok: true, group: CpuQuotaGroup } | { ok: false, reason: string }

/** The CFS period Kubernetes and Docker use unless told otherwise. */
const defaultPeriodUs = 100_000

/** Which cgroup hierarchy holds the cpu controller, and where: v2 (unified) first, then v1. */
function cpuControllerRoot (cgroupRoot = '/sys/fs/cgroup'): { kind: 'cgroup-v2' | 'cgroup-v1', dir: string } | undefined {
  const controllers = readText(path.join(cgroupRoot, 'cgroup.controllers'))
  if (controllers !== undefined) return controllers.split(/\s+/).includes('cpu') ? { kind: 'cgroup-v2', dir: cgroupRoot } : undefined
  for (const name of ['cpu', 'cpu,cpuacct', 'cpuacct,cpu']) {
    const dir = path.join(cgroupRoot, name)
    if (fs.existsSync(path.join(dir, 'cpu.cfs_quota_us'))) return { kind: 'cgroup-v1', dir }
  }
  return undefined
}

function readText (file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
}

/**
 * A cgroup named `name` limited to `cpus` CPUs (0.5: 50 ms of every 100 ms), or why there is none.
 * `periodUs`: the CFS period (default 100 ms); a process that spends its quota early waits for the
 * next period, so a shorter one makes shorter stalls (Docker's `--cpu-period`).
 */
export function createCpuQuota (name: string, cpus: number, options: { periodUs?: number, cgroupRoot?: string } = {}): CpuQuotaOutcome {
  if (!Number.isFinite(cpus) || cpus <= 0) throw new TypeError(`cpus must be a number above 0, got ${cpus}`)
  const { periodUs = defaultPeriodUs, cgroupRoot = '/sys/fs/cgroup' } = options
  // The kernel's bounds: a period of 1 ms to 1 s.
  if (!Number.isInteger(periodUs) || periodUs < 1000 || periodUs > 1_000_000) throw new TypeError(`periodUs must be a whole number from 1000 to 1000000, got ${periodUs}`)
  const root = cpuControllerRoot(cgroupRoot)
  if (root === undefined) return { ok: false, reason: `no cgroup cpu controller under ${cgroupRoot}` }
  const dir = path.join(root.dir, name)
  const quotaUs = Math.max(1000, Math.round(cpus * periodUs))
  try {
    if (root.kind === 'cgroup-v2') {
      // The cpu controller must be enabled for the root's children; harmless when it already is.
      fs.writeFileSync(path.join(root.dir, 'cgroup.subtree_control'), '+cpu')
      fs.mkdirSync(dir)
      fs.writeFileSync(path.join(dir, 'cpu.max'), `${quotaUs} ${periodUs}`)
    } else {
      fs.mkdirSync(dir)
      fs.writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(periodUs))
      fs.writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(quotaUs))
    }
  } catch (err) {
    try { fs.rmdirSync(dir) } catch {}
    return { ok: false, reason: `cannot create a ${root.kind} quota in ${root.dir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}; it needs root or a delegated cgroup)` }
  }
  return {
    ok: true,
    group: {
      kind: root.kind,
      dir,
      procsFile: path.join(dir, 'cgroup.procs'),
      remove () {
        try { fs.rmdirSync(dir) } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
        }
      },
    },
  }
}
