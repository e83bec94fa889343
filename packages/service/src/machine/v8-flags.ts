/**
 * V8's flags for a service process. A login runs its event-loop code a few dozen times a second:
 * at that rate V8 leaves it in its baseline tier (Sparkplug, inline caches in builtins) for the
 * first thousand calls or so, minutes of a storm, because a function tiers up to TurboFan only
 * after `--interrupt-budget` bytes of its bytecode have run three times over. A quarter of the
 * default budget (67,584) tiers the login path up within seconds. Measured in better-auth's
 * scrypt storm on 2 cores (50 naive clients, one account): the event loop took 0.067 and 0.069 of
 * a core against 0.084 to 0.099 without, the hash threads the difference (bench/README).
 */

/** What is added to node's own flags, each only when the operator gave none of that name. */
export const serviceV8Flags: readonly string[] = ['--interrupt-budget=16384']

/** `execArgv` with the service's V8 flags it lacks added before the operator's (theirs win, by name). */
export function withServiceV8Flags (execArgv: readonly string[]): string[] {
  const named = (flag: string): string => flag.split('=')[0]?.replace(/_/g, '-') ?? flag
  const given = new Set(execArgv.map(named))
  return [...serviceV8Flags.filter((flag) => !given.has(named(flag))), ...execArgv]
}
