/**
 * What this machine gives the process: the CPU it may really use (cgroup quota, affinity,
 * cores) and glibc's allocator settings for the hash threads' large buffers. Read by the hash
 * engine to size its pool, by `serve --workers` to share the budget, and by the launcher.
 */
export { detectCpuBudget, type CpuBudget } from './cpu-budget.js'
export { hashMallocEnv, hashMallocState, missingHashMallocEnv, withHashMallocEnv } from './malloc-env.js'
