/**
 * The public API of the password engine. The server imports from here (and
 * types from ./types.js); everything else in this folder is internal.
 */
export * from './types.js'
export { createPasswordEngine } from './engine.js'
export { defaultPolicy, validatePolicy, hashLimits, type Bound } from './limits.js'
export { needsRehash } from './rehash.js'
export type { HashReservation } from './scheduler.js'
export { detectCpuBudget, type CpuBudget } from '../machine/index.js'
