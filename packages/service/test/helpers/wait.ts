/**
 * A bounded wait on a state: checks `predicate` until it holds, and fails naming `what`
 * after `timeoutMs` (generous: a bound for a stuck test, never a duration the test relies
 * on). Between checks it yields for `intervalMs`, so the service under test gets the loop.
 */
export async function waitFor (what: string, predicate: () => Promise<boolean> | boolean, options: { timeoutMs?: number, intervalMs?: number } = {}): Promise<void> {
  const { timeoutMs = 20_000, intervalMs = 20 } = options
  const deadline = Date.now() + timeoutMs
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

/** Calls `attempt` until `done` accepts its result, and returns that result: `waitFor` for a state read by a request. */
export async function pollUntil<T> (what: string, attempt: () => Promise<T>, done: (result: T) => boolean, options: { timeoutMs?: number, intervalMs?: number } = {}): Promise<T> {
  let last: T | undefined
  await waitFor(what, async () => done(last = await attempt()), options)
  return last as T
}

/**
 * Resolves after the event loop's current turn and its check phase: work the service (in this
 * process) queued with setImmediate while handling what came before (the late-body check of a
 * request it has read) has run by then.
 */
export async function nextTurn (): Promise<void> {
  await new Promise((resolve) => { setImmediate(resolve) })
}
