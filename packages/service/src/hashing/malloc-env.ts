/**
 * glibc's malloc settings for the hash threads' memory.
 *
 * A memory-hard hash takes its memory from malloc on every call: node:crypto's scrypt asks
 * OpenSSL for 128 * N * r bytes (32 MiB at better-auth's N=16384 r=16), argon2id for its
 * memory cost (19 MiB by default). By default glibc serves an allocation that large with a
 * fresh mmap and returns it with munmap on free, so every hash page-faults its whole buffer in
 * again, and the kernel zeroes it first: 8,192 faults and 32 MiB written before scrypt's own
 * work starts. With a mmap threshold above the largest hash buffer and a trim threshold that
 * keeps the freed buffer, each hash thread reuses one buffer from its malloc arena instead.
 * Measured on 2 cores (`npm run bench:hash`, bench/README "A hash's memory, mapped afresh each
 * time"): a scrypt verify at better-auth's setting took 72 to 75 ms of one thread instead of
 * 84, and the all-core limit rose from 23.2 to 27.0 to 27.4 verifies/s; argon2id's from 182 and
 * 190 to 188 and 207. The price is memory kept: each hash thread holds its largest buffer between
 * hashes (and the main thread what its own large allocations reached) instead of giving it back.
 *
 * glibc reads these variables once, when a process starts, so they cannot be set from inside
 * the service: `npm start` and the Dockerfile set them, the launchers tollbooth uses for the
 * processes it starts (cluster workers, replicas, the lab's services) add them, and `serve` says
 * in its log when it runs without them. A value the caller set is kept. Other C libraries
 * (musl) ignore them.
 */

/** Above the largest hash buffer the settings allow (argon2id's memory cost tops out at 256 MiB). */
const mmapThresholdBytes = 512 * 1024 * 1024
/** Above the mmap threshold: a freed hash buffer at the top of an arena stays mapped. */
const trimThresholdBytes = 1024 * 1024 * 1024

export const hashMallocEnv: Readonly<Record<'MALLOC_MMAP_THRESHOLD_' | 'MALLOC_TRIM_THRESHOLD_', string>> = Object.freeze({
  MALLOC_MMAP_THRESHOLD_: String(mmapThresholdBytes),
  MALLOC_TRIM_THRESHOLD_: String(trimThresholdBytes),
})

/** The settings `env` lacks (each one its caller did not set), to add to a child process's environment. */
export function missingHashMallocEnv (env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(hashMallocEnv).filter(([name]) => env[name] === undefined))
}

/** `env` with the settings it lacks added; the caller's own values are kept. */
export function withHashMallocEnv (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, ...missingHashMallocEnv(env) }
}
