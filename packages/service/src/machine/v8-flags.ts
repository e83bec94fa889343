/**
 * V8's flags for a service process. A login runs its event-loop code a few dozen times a second:
 * at that rate the V8 of Node.js 20 leaves it in its baseline tier (Sparkplug, inline caches in
 * builtins) for the first thousand calls or so, minutes of a storm, because a function tiers up to
 * TurboFan only after `--interrupt-budget` bytes of its bytecode have run three times over. A
 * quarter of the default budget (67,584) tiers the login path up within seconds. Measured in
 * better-auth's scrypt storm on 2 cores (50 naive clients, one account): the event loop took 0.067
 * and 0.069 of a core against 0.084 to 0.099 without, the hash threads the difference (bench/README).
 * A later V8 tiers by invocation counts, with Maglev after a few hundred calls, and has no such
 * flag: nothing is added where this node refuses it.
 */
import { spawnSync } from 'node:child_process'

/** What is added to node's own flags, each only when the operator gave none of that name and this node takes it. */
const serviceV8Flags: readonly string[] = ['--interrupt-budget=16384']

/** Flags this node was seen to take or refuse (node exits 9, "bad option", on a V8 flag it does not know). */
const taken = new Map<string, boolean>()

/** Whether this node starts with `flag`: asked once, of a node that runs nothing. */
export function nodeTakes (flag: string): boolean {
  let answer = taken.get(flag)
  if (answer === undefined) {
    answer = spawnSync(process.execPath, [flag, '-e', ''], { stdio: 'ignore', timeout: 30_000 }).status === 0
    taken.set(flag, answer)
  }
  return answer
}

/** `execArgv` with the service's V8 flags it lacks added before the operator's (theirs win, by name). */
export function withServiceV8Flags (execArgv: readonly string[]): string[] {
  const named = (flag: string): string => flag.split('=')[0]?.replace(/_/g, '-') ?? flag
  const given = new Set(execArgv.map(named))
  return [...serviceV8Flags.filter((flag) => !given.has(named(flag)) && nodeTakes(flag)), ...execArgv]
}
