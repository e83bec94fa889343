/**
 * glibc's malloc settings for the hash threads' memory.
 *
 * A memory-hard hash takes its memory from malloc on every call: node:crypto's scrypt asks
 * OpenSSL for 128 * N * r bytes and a little more (32 MiB and 6 KiB at better-auth's N=16384
 * r=16). glibc serves an allocation above its mmap threshold with a fresh mmap and returns it
 * with munmap on free; the threshold rises on its own to the size of what was freed, but never
 * above 32 MiB. So every scrypt hash at that setting faulted its whole buffer in again, 8,194
 * pages the kernel zeroed first. With a fixed threshold above the buffer and a trim threshold
 * that keeps it when freed, each hash thread reuses one buffer from its malloc arena: 0 faults a
 * hash. Measured on 2 cores (bench/README, "A hash's memory, mapped afresh each time"): a scrypt
 * verify at better-auth's setting took 72 to 75 ms of one thread instead of 84, and the all-core
 * limit rose from 23.2 to 27.0 to 27.4 verifies/s.
 *
 * What it reaches: buffers above glibc's own 32 MiB ceiling and below 64 MiB, the largest heap
 * a thread's arena grows (larger ones are mapped afresh whatever the threshold): scrypt from
 * N * r = 2^18 (N=16384 r=16, N=32768 r=8) to just under 2^19. Smaller buffers, argon2id's 19 MiB
 * by default among them, glibc already keeps (265 faults an argon2id hash, with or without). The
 * price: each hash thread holds its buffer between hashes, and the main thread's own allocations
 * of 128 KiB to 64 MiB come from its heap, up to 128 MiB of it kept after they are freed.
 *
 * Only glibc 2.35 and later: older ones refuse a threshold above 32 MiB, and the trim threshold
 * alone would then fix the mmap threshold at its 128 KiB default, so mid-size buffers glibc
 * keeps today would be mapped afresh. Other C libraries (musl, macOS) ignore the variables.
 * glibc reads them once, when a process starts, so they cannot be set from inside the service:
 * the Dockerfile sets them, the launchers tollbooth uses for the processes it starts (cluster
 * workers, replicas, the lab's services) add them, and `serve` logs when it runs without them.
 * A value the caller set is kept.
 */

/** Above a 2^18 scrypt buffer (32 MiB and a little), at the 64 MiB a thread's arena heap tops out at. */
const mmapThresholdBytes = 64 * 1024 * 1024
/** Above the mmap threshold: a freed hash buffer at the top of an arena stays mapped. */
const trimThresholdBytes = 128 * 1024 * 1024

export const hashMallocEnv: Readonly<Record<'MALLOC_MMAP_THRESHOLD_' | 'MALLOC_TRIM_THRESHOLD_', string>> = Object.freeze({
  MALLOC_MMAP_THRESHOLD_: String(mmapThresholdBytes),
  MALLOC_TRIM_THRESHOLD_: String(trimThresholdBytes),
})

let glibcVersion: string | null | undefined

/** This process's glibc version ("2.36"), or null when it runs on another C library (read once: a diagnostic report is not free). */
export function runtimeGlibcVersion (): string | null {
  if (glibcVersion === undefined) {
    const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header
    glibcVersion = header?.glibcVersionRuntime ?? null
  }
  return glibcVersion
}

/** Whether the settings work with glibc `version` (2.35 and later take a threshold above 32 MiB). */
export function glibcTakesHashMallocEnv (version: string | null): boolean {
  if (version === null) return false
  const [major = 0, minor = 0] = version.split('.').map(Number)
  return major > 2 || (major === 2 && minor >= 35)
}

/**
 * The settings `env` lacks (each one its caller did not set), to add to a child process's
 * environment; none where the C library does not take them (`glibcVersion`, default: this
 * process's, which a child on this machine shares).
 */
export function missingHashMallocEnv (env: NodeJS.ProcessEnv, glibcVersion: string | null = runtimeGlibcVersion()): Record<string, string> {
  if (!glibcTakesHashMallocEnv(glibcVersion)) return {}
  return Object.fromEntries(Object.entries(hashMallocEnv).filter(([name]) => env[name] === undefined))
}

/** `env` with the settings it lacks added, where the C library takes them; the caller's own values are kept. */
export function withHashMallocEnv (env: NodeJS.ProcessEnv, glibcVersion: string | null = runtimeGlibcVersion()): NodeJS.ProcessEnv {
  return { ...env, ...missingHashMallocEnv(env, glibcVersion) }
}

/**
 * Whether a process with `env` runs with the settings: `set` (both present; values are the
 * caller's), `missing` (glibc would take them and one is absent), or `not applicable` (another
 * C library or a glibc before 2.35). Exported on /metrics, so a run against a service started by
 * hand says which it was.
 */
export function hashMallocState (env: NodeJS.ProcessEnv = process.env, glibcVersion: string | null = runtimeGlibcVersion()): 'set' | 'missing' | 'not applicable' {
  if (!glibcTakesHashMallocEnv(glibcVersion)) return 'not applicable'
  return Object.keys(missingHashMallocEnv(env, glibcVersion)).length === 0 ? 'set' : 'missing'
}
