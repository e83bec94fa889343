/** The service's settings: the table (settings.ts) and the loader (load.ts). */
export { databaseStatementKinds, settings, type Config, type DatabaseStatements, type FlatConfig, type Setting, type SettingTier, type TrustProxy } from './settings.js'
export { configHelp, isLoopbackHost, loadConfig, maxWorkers, parseTrustProxy, parseWorkers, readSecret, type LoadConfigInput } from './load.js'
