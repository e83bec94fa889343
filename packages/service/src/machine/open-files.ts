/**
 * The open-files limit (soft RLIMIT_NOFILE): read by the service's start, which warns when it is
 * short of the connections it plans for, and by the launcher's machine facts, so a load generator
 * keeps its sockets under its own.
 */
import fs from 'node:fs'

/** The soft RLIMIT_NOFILE from the text of /proc/<pid>/limits; Infinity when unlimited, undefined when absent. */
export function openFilesLimit (limits: string): number | undefined {
  const match = /^Max open files\s+(\S+)/m.exec(limits)
  if (match?.[1] === undefined) return undefined
  return match[1] === 'unlimited' ? Infinity : Number(match[1])
}

/** This process's soft open-files limit; undefined where /proc cannot tell. */
export function ownOpenFilesLimit (file = '/proc/self/limits'): number | undefined {
  let limits: string
  try {
    limits = fs.readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
  return openFilesLimit(limits)
}
