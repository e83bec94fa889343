/** The db/embedded room's public face: what the rest of the service uses of it. */
export { type EmbeddedDatabase, runningEmbeddedPostgresUrl, scratchClusterDir, startEmbeddedPostgres } from './embedded.js'
export { serviceRoleName } from './role.js'
