/**
 * The worker-thread entry (Piscina): the thread lowers its own priority, then runs each task
 * it is given (run-task.ts). Hashes are computed in these threads only, so the event loop and
 * libuv's shared thread pool never compute one.
 */
import fs from 'node:fs'
import os from 'node:os'
import { workerData } from 'node:worker_threads'
import type { HashWorkerData } from './executor.js'
import { runHashTask } from './run-task.js'

/**
 * On Linux, setpriority() on a thread id changes that thread alone, so the event loop gets the
 * core the moment it has work. Raising nice needs no privilege; without /proc/thread-self (not
 * Linux) nothing changes. Only ever lowered: in a process already nicer, the thread keeps the
 * process's value rather than outrank its event loop.
 */
function lowerOwnPriority (nice: number): void {
  if (nice <= 0) return
  try {
    const threadId = Number(fs.readlinkSync('/proc/thread-self').split('/').pop())
    if (Number.isSafeInteger(threadId) && threadId > 0 && os.getPriority(threadId) < nice) os.setPriority(threadId, nice)
  } catch {}
}

lowerOwnPriority((workerData as Partial<HashWorkerData> | undefined)?.threadNice ?? 0)

export default runHashTask
