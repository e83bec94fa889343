/** The password engine's one face: everything outside hashing/ imports from here. */
export * from './types.js'
export { createPasswordEngine } from './engine.js'
export { defaultPolicy, validatePolicy, hashLimits, storedHashWithinBounds, type Bound, type StoredHash, type StoredHashCheck } from './limits.js'
export {
  describeMemoryMisfit, formatBytes, hashMemoryBytes, largestMemoryParam, policyHashParams, poolMemoryMisfit, storedMemoryBound,
  type HashParams, type MisfitNames, type PoolMemoryMisfit, type StoredMemoryBound,
} from './memory-fit.js'
export { needsRehash } from './rehash.js'
export { answerReserveMs, hashDeadlineAt } from './ticket.js'
export { detectCpuBudget, detectMemoryBudget, hashShareOf, type CpuBudget, type MemoryBudget } from '../machine/index.js'

// For executors other than tollbooth's pool (the lab's harness reproduces the seed articles'):
// the interface the engine runs work on, and the parts every executor counts and hashes with.
export type { ExecutorFactory, ExecutorSettings, HashExecutor, HashReply, HashTask, HashWork, TimedValue } from './executor.js'
export { AdmissionTicket, type AdmissionRequest } from './ticket.js'
export { errorFields, processWarningLog, TaskCounters } from './task-counters.js'
export { nextMeanRunMs } from './queue/index.js'
export { runHashTask } from './run-task.js'
export { hasherFor } from './hashers/index.js'
export { bcryptMaxPasswordBytes, bcryptPasswordTooLong } from './hashers/index.js'
export { formatScrypt, parseScrypt } from './hashers/index.js'
export { scryptMaxmemBytes } from './hashers/index.js'
export { hashWorkerUrl } from './pool.js'
// For importing accounts from other systems: their hashes' canonical spellings, and the bounds every stored hash meets.
export { inspectStoredHash } from './limits.js'
export { checkFirebaseHashParams, formatFirebaseScrypt, formatPbkdf2, noPasswordHash, type FirebaseHashParams, type ForeignFormat, type Pbkdf2Digest } from './hashers/index.js'
