/**
 * Load and what it measures: the generator threads (open and closed models, k6's stages), the
 * /healthz probe beside them with its empty reference server, and the knee search's steps; one
 * run against one service collected into a RunResult (runner.ts).
 */
export { defaultKneeCriteria, kneeOf, searchKnee } from './knee.js'
export { HealthzProbe } from './probe.js'
export { startReferenceServer } from './reference-server.js'
export { runLoad, type RunSegment } from './runner.js'
export { errorTotal } from './stats.js'
