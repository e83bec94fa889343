/**
 * What this machine gives the process: the CPU it may really use (cgroup quota, affinity,
 * cores), the memory it may hold (cgroup limit, the machine's) and glibc's allocator settings for
 * the hash threads' large buffers. Read by the hash engine to size and bound its pool, by
 * `serve --workers` to share the budget, and by the launcher; and whether the scheduler groups
 * processes by session (what nice values then mean, for the lab's measurements); and the open-files
 * limit, for the connections a process may hold; and V8's flags for a service process.
 */
export { detectCpuBudget, type CpuBudget } from './cpu-budget.js'
export { defaultHashMemoryPercent, detectMemoryBudget, hashShareOf, type MemoryBudget } from './memory-budget.js'
export { schedulerAutogroups } from './scheduler.js'
export { openFilesLimit, ownOpenFilesLimit } from './open-files.js'
export { hashMallocEnv, hashMallocEnvTurnedOff, hashMallocState, missingHashMallocEnv, withHashMallocEnv } from './malloc-env.js'
export { withServiceV8Flags } from './v8-flags.js'
