/**
 * The service under measurement, as the lab sees it from outside: started through the service's
 * launcher or named by the user (source.ts), and read once a second from /metrics and /proc
 * (scraper.ts); the CPU of a process tree, such as PostgreSQL's (process-tree.ts).
 */
export { adminCommandEnv, type ReplicaOptions } from './local-service.js'
export { parentPid, processTreeUsage } from './process-tree.js'
export { MetricsScraper } from './scraper.js'
export { seedServiceEnv, serviceSource } from './source.js'
