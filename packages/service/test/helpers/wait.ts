/**
 * A bounded wait on a state: checks `predicate` until it holds, and fails naming `what`
 * after `timeoutMs` (generous: a bound for a stuck test, never a duration the test relies
 * on). Between checks it yields for `intervalMs`, so the service under test gets the loop.
 */
export async function waitFor (what: string, predicate: () => Promise<boolean> | boolean, options: { timeoutMs?: number, intervalMs?: number } = {}): Promise<void> {
  const { timeoutMs = 10_000, intervalMs = 20 } = options
  const deadline = Date.now() + timeoutMs
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}
