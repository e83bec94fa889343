/**
 * The worker-thread entry (Piscina): pure synchronous functions and no state
 * besides the hashers. This is the only place hashes are computed, so the event
 * loop and libuv's shared thread pool never are.
 *
 * Run time is measured here, around the hash alone, and returned with the
 * result: the pool derives queue wait as (total - run).
 */
import { performance } from 'node:perf_hooks'
import { isTollboothError } from '../errors.js'
import type { HashReply, HashTask } from './executor.js'
import { hasherFor, hashers } from './hasher.js'

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

export default function run (task: HashTask): HashReply {
  const started = performance.now()
  try {
    const value = execute(task)
    return { ok: true, value, runMs: performance.now() - started }
  } catch (err) {
    const runMs = performance.now() - started
    // Coded errors do not survive structured cloning as such: send the code as data.
    if (isTollboothError(err)) return { ok: false, code: err.code, message: err.message, runMs }
    return { ok: false, code: 'INTERNAL', message: err instanceof Error ? err.message : String(err), runMs }
  }
}
