/**
 * A child that stands in for this process: it runs with this process's stdio, receives the
 * signals this process gets, and this process ends as it ends (its exit code, or killed by the
 * same signal). The fallback of malloc-reexec.ts where node cannot replace itself.
 *
 * The child runs in a session of its own, so a terminal's Ctrl-C, sent to the whole foreground
 * process group, reaches it once, through this process: `serve` takes a second SIGINT for "exit
 * now, without a clean shutdown". The price: a SIGKILL to this process, which cannot be relayed,
 * leaves the child running, as it would leave any supervisor's child; and where the kernel groups
 * scheduling by session (autogroups), the child is a group of its own.
 */
import { spawn } from 'node:child_process'
import os from 'node:os'

/** What a terminal, a supervisor or `kill` sends to stop the service. */
const relayedSignals: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']

/** Starts `command` as this process's stand-in; this process exits when it does. */
export function relayToChild (command: string, args: readonly string[], env: NodeJS.ProcessEnv): void {
  const child = spawn(command, args, { env, stdio: 'inherit', detached: true })
  const relay = (signal: NodeJS.Signals): void => { child.kill(signal) }
  for (const signal of relayedSignals) process.on(signal, relay)
  child.once('error', (err) => {
    process.stderr.write(`tollbooth: could not start node again (${err.message})\n`)
    process.exit(1)
  })
  child.once('exit', (code, signal) => {
    for (const relayed of relayedSignals) process.off(relayed, relay)
    if (signal === null) process.exit(code ?? 1)
    // Killed: by the same signal, so whoever started this process reads the child's end.
    process.kill(process.pid, signal)
    // Still here: a signal node ignores (SIGPIPE); the shell's code for it.
    process.exit(128 + (os.constants.signals[signal] ?? 0))
  })
}
