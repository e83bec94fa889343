/**
 * glibc reads its malloc settings for hashing (machine/malloc-env.ts) once, when a process
 * starts. A `tollbooth` started without them (`npm start`, a systemd unit, a shell) starts node
 * again with the same arguments and them added, before it loads anything else
 * (bin/tollbooth.js): with process.execve (Node.js 22.15 and later) the process replaces itself
 * and keeps its pid, so a supervisor, a container's PID 1, signals, exit codes and the ready file
 * see no difference; an older node runs the command as a child instead (child-relay.ts).
 *
 * Not a hashing path that needs no settings: node's crypto.scrypt asks OpenSSL for its buffer
 * on every call, with no way to hand it one to reuse, and a JavaScript or WebAssembly scrypt that
 * could is slower than the faults it would save.
 *
 * It never loops: the new process finds a marker and never re-executes (and it has the settings).
 * The new node also gets the service's V8 flags (machine/v8-flags.ts) where it lacks them.
 * An operator's own values are kept; only the missing ones are added. Nothing happens where the
 * C library does not take them (musl, glibc before 2.35), or with TOLLBOOTH_MALLOC_SETTINGS=off
 * (or `--malloc-settings off`).
 */
import { hashMallocEnv, hashMallocEnvTurnedOff, missingHashMallocEnv, withServiceV8Flags } from '../machine/index.js'
import { relayToChild } from './child-relay.js'

/** In the new process's environment: how it was started and the settings added (`execve:NAME,NAME`). Taken out at its start, so its own children never see it. */
const reexecMarkerEnv = 'TOLLBOOTH_MALLOC_REEXECUTED'

type ReexecMethod = 'execve' | 'child process'
const reexecMethods: readonly ReexecMethod[] = ['execve', 'child process']

export interface HashMallocReexec {
  /** How node was started again: in place, or as a child where node has no process.execve (before 22.15). */
  by: ReexecMethod
  /** The settings it added. */
  applied: Record<string, string>
  /** The operator's own values, kept as they were. */
  kept: Record<string, string>
}

let reexecuted: HashMallocReexec | undefined

/** What the re-execution that started this process applied, for the service's log; undefined when it started as it is. */
export function hashMallocReexec (): HashMallocReexec | undefined {
  return reexecuted
}

/**
 * The environment to start node again with (`by` written into its marker), or undefined: a
 * process that is itself a re-execution, the operator's opt-out in `env` or `args`, nothing
 * missing, or a C library (`glibcVersion`, default this process's) that does not take them.
 */
export function reexecEnv (env: NodeJS.ProcessEnv, args: readonly string[], by: ReexecMethod, glibcVersion?: string | null): NodeJS.ProcessEnv | undefined {
  if (env[reexecMarkerEnv] !== undefined || hashMallocEnvTurnedOff(env, args)) return undefined
  const missing = missingHashMallocEnv(env, glibcVersion)
  const names = Object.keys(missing)
  if (names.length === 0) return undefined
  return { ...env, ...missing, [reexecMarkerEnv]: `${by}:${names.join(',')}` }
}

/** The entries of `env` named in `names` that it sets. */
function pick (env: NodeJS.ProcessEnv, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => env[name] === undefined ? [] : [[name, env[name]]]))
}

/** Reads and removes the marker a re-execution left in this process's environment. */
function takeMarker (): HashMallocReexec | undefined {
  const marker = process.env[reexecMarkerEnv]
  if (marker === undefined) return undefined
  Reflect.deleteProperty(process.env, reexecMarkerEnv)
  const colon = marker.indexOf(':')
  const by = reexecMethods.find((method) => method === marker.slice(0, colon)) ?? 'execve'
  const added = new Set(marker.slice(colon + 1).split(','))
  const names = Object.keys(hashMallocEnv)
  return { by, applied: pick(process.env, names.filter((name) => added.has(name))), kept: pick(process.env, names.filter((name) => !added.has(name))) }
}

/**
 * Called first by bin/tollbooth.js. Returns 'run here' when this process goes on with the command
 * (it has the settings, cannot have them, or was told not to); 'relayed' when a child runs it and
 * this process only relays signals and the exit. With process.execve it does not return when it
 * re-executes.
 */
export function startWithHashMallocEnv (): 'run here' | 'relayed' {
  reexecuted = takeMarker()
  if (reexecuted !== undefined) return 'run here'
  const by: ReexecMethod = process.execve === undefined ? 'child process' : 'execve'
  const env = reexecEnv(process.env, process.argv.slice(2), by)
  if (env === undefined) return 'run here'
  // The new node gets the service's V8 flags too (machine/v8-flags.ts), where the operator gave none.
  const args = [...withServiceV8Flags(process.execArgv), ...process.argv.slice(1)]
  if (process.execve !== undefined) {
    try {
      process.execve(process.execPath, [process.execPath, ...args], env)
    } catch (err) {
      // Where node throws rather than aborts when execve(2) fails: go on without them; `serve` then logs that they are missing.
      process.stderr.write(`tollbooth: could not start node again with glibc's malloc settings for hashing (${(err as Error).message}); going on without them\n`)
      return 'run here'
    }
  }
  relayToChild(process.execPath, args, env)
  return 'relayed'
}
