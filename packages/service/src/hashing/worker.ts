/**
 * The worker-thread entry (Piscina): pure synchronous functions and no state
 * besides the hashers. This is the only place hashes are computed, so the event
 * loop and libuv's shared thread pool never are.
 *
 * Run time is measured here, around the hash alone, and returned with the
 * result: the pool derives queue wait as (total - run).
 */
import fs from 'node:fs'
import os from 'node:os'
import { performance } from 'node:perf_hooks'
import { workerData } from 'node:worker_threads'
import { isTollboothError } from '../errors.js'
import type { HashReply, HashTask, HashWorkerData } from './executor.js'
import { hasherFor, hashers } from './hashers/registry.js'

/**
 * On Linux, setpriority() on a thread id changes that thread alone: a hash thread at nice 10
 * leaves the core to the event loop the moment it has work (a /healthz probe, a refusal, the
 * next task to hand over) and takes every cycle left over. Raising a nice value needs no
 * privilege; where /proc/thread-self is missing (not Linux), nothing changes. Only ever
 * lowered: in a process already nicer than `nice` (`nice -n 19 npm start`, run as root, who
 * could), the thread keeps the process's value instead of outranking its event loop.
 */
function lowerOwnPriority (nice: number): void {
  if (nice <= 0) return
  try {
    const threadId = Number(fs.readlinkSync('/proc/thread-self').split('/').pop())
    if (Number.isSafeInteger(threadId) && threadId > 0 && os.getPriority(threadId) < nice) os.setPriority(threadId, nice)
  } catch {}
}

lowerOwnPriority((workerData as Partial<HashWorkerData> | undefined)?.threadNice ?? 0)

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

export default function run (task: HashTask): HashReply {
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
