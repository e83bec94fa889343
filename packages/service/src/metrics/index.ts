/** The metrics room's public face: what the rest of the service uses of it. */
export { createMetrics, type Metrics } from './metrics.js'
export { primaryMetrics, serveClusterMetrics } from './cluster-metrics.js'
