/**
 * Reading this process's cgroups: its membership (/proc/self/cgroup) and the pseudo-files of its
 * cgroup and every ancestor, whose limits apply to it too. Shared by the CPU and memory budgets.
 */
import fs from 'node:fs'
import path from 'node:path'

export interface CgroupLocation {
  /** Where the cgroup filesystems are mounted (tests pass a fake tree). */
  cgroupRoot?: string | undefined
  /** This process's cgroup membership file (tests pass a fake one). */
  procSelfCgroup?: string | undefined
}

export const defaultCgroupRoot = '/sys/fs/cgroup'
export const defaultProcSelfCgroup = '/proc/self/cgroup'

export function readText (file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch {
    return undefined // no such controller, level or file: normal outside containers
  }
}

/** `/a/b/c` -> ['/a/b/c', '/a/b', '/a', '/']: a limit on any ancestor applies to us too. */
export function selfAndAncestors (cgroupPath: string): string[] {
  const levels: string[] = []
  let current = path.posix.normalize('/' + cgroupPath)
  for (;;) {
    levels.push(current)
    if (current === '/') return levels
    current = path.posix.dirname(current)
  }
}

export interface Membership {
  /** The v2 path (`0::/path`), when the unified hierarchy is present. */
  unified: string | undefined
  /** v1 lines: controllers -> path. */
  v1: Array<{ controllers: string[], path: string }>
}

export function readMembership (procSelfCgroup: string): Membership {
  const membership: Membership = { unified: undefined, v1: [] }
  for (const line of (readText(procSelfCgroup) ?? '').split('\n')) {
    // hierarchy-ID:controller-list:cgroup-path (the path may itself contain ':')
    const first = line.indexOf(':')
    const second = line.indexOf(':', first + 1)
    if (first === -1 || second === -1) continue
    const hierarchy = line.slice(0, first)
    const controllers = line.slice(first + 1, second)
    const cgroupPath = line.slice(second + 1)
    if (hierarchy === '0' && controllers === '') membership.unified = cgroupPath
    else membership.v1.push({ controllers: controllers.split(','), path: cgroupPath })
  }
  return membership
}

/**
 * The v1 hierarchy holding `controller`: the mount named after its co-mounted controllers
 * (`cpu,cpuacct`), or one of `mountNames`; undefined when none is mounted.
 */
export function v1Mount (cgroupRoot: string, controllers: string[], mountNames: readonly string[]): string | undefined {
  return [controllers.join(','), ...mountNames].map((name) => path.join(cgroupRoot, name)).find((dir) => fs.existsSync(dir))
}
