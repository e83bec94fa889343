/**
 * The service under measurement, as the lab sees it from outside: started through the service's
 * launcher or named by the user (source.ts), and read once a second from /metrics and /proc
 * (scraper.ts).
 */
export { type ReplicaOptions } from './local-service.js'
export { MetricsScraper } from './scraper.js'
export { seedServiceEnv, serviceSource } from './source.js'
