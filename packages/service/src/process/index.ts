/** Running the service: one process (start.ts), several on one port (cluster.ts), the admin listener (admin.ts), node started again with glibc's malloc settings (malloc-reexec.ts). */
export { handleSignals, startService, type ServiceHarness } from './start.js'
export { clusterSize, clusterWorkerConfig, isClusterWorker, startClusterPrimary, startClusterWorker } from './cluster.js'
export { hashMallocReexec } from './malloc-reexec.js'
