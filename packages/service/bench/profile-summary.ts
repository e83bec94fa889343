/**
 * A V8 CPU profile (`node --cpu-prof`, one thread) summarised: self time by
 * function and by module (a package, a Node.js core module, a project file, or
 * V8 itself: the garbage collector, native code such as syscalls), as a share
 * of the time the thread was busy (idle excluded).
 */
import { packageRoot } from '../src/paths.js'

export interface ProfileNode {
  id: number
  callFrame: { functionName: string, url: string, lineNumber: number }
  hitCount?: number
}

export interface CpuProfile { nodes: ProfileNode[], startTime: number, endTime: number, samples?: number[] }

export interface SelfTime { name: string, ms: number, share: number }

/** Where a function lives, for grouping: a package, a Node.js core module, a project file, or V8 itself. */
export function moduleOf (url: string, functionName: string): string {
  if (url === '') {
    if (functionName === '(garbage collector)') return '(garbage collector)'
    if (functionName === '(program)' || functionName === '(idle)') return functionName
    return '(native)'
  }
  const nodeModules = url.lastIndexOf('/node_modules/')
  if (nodeModules !== -1) {
    const parts = url.slice(nodeModules + '/node_modules/'.length).split('/')
    return parts[0]?.startsWith('@') === true ? `${parts[0]}/${parts[1] ?? ''}` : (parts[0] ?? url)
  }
  if (url.startsWith('node:')) {
    const parts = url.slice('node:'.length).split('/')
    return `node:${parts[0] === 'internal' && parts.length > 2 ? `internal/${parts[1] ?? ''}` : parts.join('/')}`
  }
  const root = `file://${packageRoot}/`
  if (url.startsWith(root)) return `tollbooth: ${url.slice(root.length).replace(/^dist\//, '')}`
  return url
}

export interface ProfileSummary {
  /** Sampled time of the main thread, idle excluded. */
  busyMs: number
  idleMs: number
  functions: SelfTime[]
  modules: SelfTime[]
}

export function summariseProfile (profile: CpuProfile, top: number): ProfileSummary {
  const totalHits = profile.nodes.reduce((sum, node) => sum + (node.hitCount ?? 0), 0)
  const msPerHit = totalHits === 0 ? 0 : (profile.endTime - profile.startTime) / 1000 / totalHits
  const byFunction = new Map<string, number>()
  const byModule = new Map<string, number>()
  let idleMs = 0
  for (const node of profile.nodes) {
    const ms = (node.hitCount ?? 0) * msPerHit
    if (ms === 0) continue
    const { functionName, url, lineNumber } = node.callFrame
    if (functionName === '(idle)') {
      idleMs += ms
      continue
    }
    const module = moduleOf(url, functionName)
    const name = `${functionName === '' ? '(anonymous)' : functionName} ${url === '' ? '' : `[${module}:${lineNumber + 1}]`}`.trim()
    byFunction.set(name, (byFunction.get(name) ?? 0) + ms)
    byModule.set(module, (byModule.get(module) ?? 0) + ms)
  }
  const busyMs = [...byModule.values()].reduce((sum, ms) => sum + ms, 0)
  const ranked = (map: Map<string, number>): SelfTime[] => [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, ms]) => ({ name, ms, share: busyMs === 0 ? 0 : ms / busyMs }))
  return { busyMs, idleMs, functions: ranked(byFunction), modules: ranked(byModule) }
}
