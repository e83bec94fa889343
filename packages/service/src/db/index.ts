/**
 * PostgreSQL: the pool and its transactions (pool.ts), the versioned migrations (migrate.ts,
 * migrations/), the embedded server for development (embedded/), and one small repository per
 * table or group of tables (the account tables in accounts/), each a set of parameterised statements.
 */
export { createDatabasePool, withTransaction, type Queryable } from './pool.js'
export { grantRuntimeRole, migrate, migrateAtStart } from './migrate.js'
export { isConnectionFailure, isDatabaseFault, isForeignKeyViolation, toDatabaseFault } from './errors.js'
export { ThrottledFaultLog } from './fault-log.js'
export { runningEmbeddedPostgresUrl, scratchClusterDir, serviceRoleName, startEmbeddedPostgres, type EmbeddedDatabase } from './embedded/index.js'
export {
  claimDueMail, claimForLog, countMailRequest, enqueueMail, markAttemptFailed, markSent, markSkipped, releaseClaim, type ClaimedMail, type MailLink, type MailMessage, type MailRequestCount, type MailRequestScope,
} from './mail-outbox.js'
export { insertPost, listPosts } from './posts.js'
export { changeSigningKeys, listenForSigningKeyChanges, listSigningKeys, signingKeysChannel, type StoredSigningKey } from './signing-keys.js'
export { purgeBatch, purgeTargets, type PurgeTarget } from './purge.js'
export {
  consumeOidcPayload, deleteOidcGrant, deleteOidcPayload, findOidcPayload, findOidcPayloadByUid, upsertOidcPayload,
} from './oidc-payloads.js'
export { deleteOidcClient, findOidcClient, insertOidcClient, listOidcClients, lockOidcClients, updateFileOidcClient, type NewOidcClient, type OidcClientSource, type StoredOidcClient } from './oidc-clients.js'
export * from './accounts/index.js'
