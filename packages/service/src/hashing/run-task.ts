/**
 * One hash task, run synchronously on the calling thread (worker.ts, and the lab's harness). Run
 * time is measured around the hash alone, so the pool can derive queue wait as total - run.
 */
import { performance } from 'node:perf_hooks'
import { isTollboothError } from '../errors.js'
import type { HashReply, HashTask } from './executor.js'
import { hasherFor, hashers } from './hashers/index.js'

function execute (task: HashTask): string | boolean | null {
  switch (task.kind) {
    case 'ping': return null
    case 'verify': return hasherFor(task.stored).verifySync(task.password, task.stored)
    case 'hash':
      switch (task.algorithm) {
        case 'argon2id': return hashers.argon2id.hashSync(task.password, task.params)
        case 'bcrypt': return hashers.bcrypt.hashSync(task.password, task.params)
        case 'scrypt': return hashers.scrypt.hashSync(task.password, task.params)
      }
  }
}

/** The longest a mismatch is held on its thread (HashTask `mismatchRunMs`). */
const maxMismatchRunMs = 5000

export function runHashTask (task: HashTask): HashReply {
  const started = performance.now()
  try {
    const value = execute(task)
    if (task.kind === 'verify' && value === false && task.mismatchRunMs !== undefined) {
      // Busy, as a verify of the policy's would be: the thread is not free sooner for the next task.
      const until = started + Math.min(task.mismatchRunMs, maxMismatchRunMs)
      while (performance.now() < until) { /* spin */ }
    }
    return { ok: true, value, runMs: performance.now() - started }
  } catch (err) {
    const runMs = performance.now() - started
    // Coded errors do not survive structured cloning as such: send the code as data.
    if (isTollboothError(err)) return { ok: false, code: err.code, message: err.message, runMs }
    return { ok: false, code: 'INTERNAL', message: err instanceof Error ? err.message : String(err), runMs }
  }
}
