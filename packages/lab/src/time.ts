/**
 * Time as the lab keeps it and as its users write it: one epoch clock for every thread, the run's
 * seconds on it, and durations such as 30s or 1m30s (flags, scenario files).
 */
import { performance } from 'node:perf_hooks'
import { LabError } from './errors.js'

/** Wall-clock epoch ms at sub-millisecond resolution: the same clock in every thread, so second `t` is one interval for all. */
export function nowEpochMs (): number {
  return performance.timeOrigin + performance.now()
}

/** The second `t` of the run an instant falls in, [t - 1, t) seconds after the run's start; second 1 before it. */
export function secondOf (epochMs: number, runStartEpochMs: number): number {
  return Math.max(1, Math.floor((epochMs - runStartEpochMs) / 1000) + 1)
}

const durationUnitsMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** "500ms", "30s", "1.5m", "1h", "1m30s", or a bare number of seconds. Throws CONFIG_INVALID. */
export function parseDurationMs (text: string, what = 'duration'): number {
  const trimmed = text.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000)
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)]
  if (parts.length === 0 || parts.map((part) => part[0]).join('') !== trimmed) {
    throw new LabError(`${what} must look like 500ms, 30s, 2m or 1m30s, got "${text}"`, what)
  }
  return Math.round(parts.reduce((sum, part) => sum + Number(part[1]) * (durationUnitsMs[part[2] ?? 's'] ?? 1000), 0))
}
