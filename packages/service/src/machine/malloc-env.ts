/**
 * glibc's malloc settings for the hash threads' memory. scrypt asks OpenSSL for 128 * N * r bytes
 * on every call; glibc maps an allocation above its mmap threshold afresh (its dynamic threshold
 * stops at 32 MiB), so each hash would fault its whole buffer in again, zeroed. A fixed threshold
 * above the buffer and a trim threshold that keeps it let each hash thread reuse one buffer.
 *
 * It reaches buffers from 32 MiB to 64 MiB (the largest heap a thread's arena grows): scrypt at
 * N * r from 2^18 to just under 2^19. Smaller buffers (argon2id's 19 MiB) glibc already keeps. The
 * price: each hash thread keeps its buffer, and the main thread keeps up to 128 MiB of heap.
 *
 * Only glibc 2.35 and later take a threshold above 32 MiB (on older ones the trim threshold alone
 * would pin the mmap threshold at 128 KiB); other C libraries ignore the variables. glibc reads
 * them at process start, so the Dockerfile and tollbooth's launchers set them, the `tollbooth`
 * command starts node again with them where they are missing (process/malloc-reexec.ts), and a
 * service that still lacks them logs so. A value the caller set is kept; the setting
 * TOLLBOOTH_MALLOC_SETTINGS=off (config/settings.ts) has tollbooth add none.
 */
import { parseArgs } from 'node:util'

/** Above a 2^18 scrypt buffer (32 MiB and a little), at the 64 MiB a thread's arena heap tops out at. */
const mmapThresholdBytes = 64 * 1024 * 1024
/** Above the mmap threshold: a freed hash buffer at the top of an arena stays mapped. */
const trimThresholdBytes = 128 * 1024 * 1024

export const hashMallocEnv: Readonly<Record<'MALLOC_MMAP_THRESHOLD_' | 'MALLOC_TRIM_THRESHOLD_', string>> = Object.freeze({
  MALLOC_MMAP_THRESHOLD_: String(mmapThresholdBytes),
  MALLOC_TRIM_THRESHOLD_: String(trimThresholdBytes),
})

/** The opt-out, declared with the other settings in config/settings.ts: read here too, before the config is (node starts again before anything else loads). */
const optOutVariable = 'TOLLBOOTH_MALLOC_SETTINGS'
const optOutFlag = 'malloc-settings'

/** Whether the operator turned tollbooth's adding of the settings off: `--malloc-settings off` among `args`, else TOLLBOOTH_MALLOC_SETTINGS=off in `env`. Any other value is `serve`'s configuration to judge. */
export function hashMallocEnvTurnedOff (env: NodeJS.ProcessEnv, args: readonly string[] = []): boolean {
  const fromFlag = parseArgs({ args: [...args], options: { [optOutFlag]: { type: 'string' } }, strict: false, allowPositionals: true }).values[optOutFlag]
  return (typeof fromFlag === 'string' ? fromFlag : env[optOutVariable]) === 'off'
}

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

/** The settings `env` lacks, to add to a child's environment; none where the C library (`glibcVersion`) does not take them. */
export function missingHashMallocEnv (env: NodeJS.ProcessEnv, glibcVersion: string | null = runtimeGlibcVersion()): Record<string, string> {
  if (!glibcTakesHashMallocEnv(glibcVersion)) return {}
  return Object.fromEntries(Object.entries(hashMallocEnv).filter(([name]) => env[name] === undefined))
}

/** `env` with the settings it lacks added, where the C library takes them; the caller's own values are kept. */
export function withHashMallocEnv (env: NodeJS.ProcessEnv, glibcVersion: string | null = runtimeGlibcVersion()): NodeJS.ProcessEnv {
  return { ...env, ...missingHashMallocEnv(env, glibcVersion) }
}

/** Whether a process with `env` runs with the settings (`set`, `missing`, `not applicable`): on /metrics, for the lab's reports. */
export function hashMallocState (env: NodeJS.ProcessEnv = process.env, glibcVersion: string | null = runtimeGlibcVersion()): 'set' | 'missing' | 'not applicable' {
  if (!glibcTakesHashMallocEnv(glibcVersion)) return 'not applicable'
  return Object.keys(missingHashMallocEnv(env, glibcVersion)).length === 0 ? 'set' : 'missing'
}
