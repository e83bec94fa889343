/** The service's settings: the table (settings.ts) and the loader (load.ts). */
export { settings, type Config, type FlatConfig } from './settings.js'
export { passkeyRelyingParty, type RelyingParty } from './relying-party.js'
export { isLoopbackHost } from './database-pool.js'
export { configHelp, loadConfig, parseTrustProxy, parseWorkers, readSecret } from './load.js'
export { writeHashCalibration } from './hash-calibration.js'
export { parseHashMemoryBudget, resolveHashMemoryBudget } from './hash-memory.js'
