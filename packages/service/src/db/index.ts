/**
 * PostgreSQL: the pool and its transactions (pool.ts), the versioned migrations (migrate.ts,
 * migrations/), the embedded server for development (embedded/), and one small repository per
 * table or group of tables, each a set of parameterised statements.
 */
export { createDatabasePool, withTransaction, type Queryable } from './pool.js'
export { grantRuntimeRole, migrate, migrateAtStart } from './migrate.js'
export { isConnectionFailure, isDatabaseFault, isForeignKeyViolation, toDatabaseFault } from './errors.js'
export { ThrottledFaultLog } from './fault-log.js'
export { runningEmbeddedPostgresUrl, scratchClusterDir, serviceRoleName, startEmbeddedPostgres, type EmbeddedDatabase } from './embedded/index.js'
export { findUserByEmail, findUserById, insertUser, lockUserKeyShare, markEmailVerified, publicUser, replacePasswordHash, setPasswordHashByMail, type User, type UserWithHash } from './users.js'
export { deleteAccount } from './accounts.js'
export {
  findTokenFamily, insertRefreshToken, insertSessionWithToken, isSessionLive, listLiveSessions, lockRefreshToken, lockSessionForRefresh, markRotated, revokeAllSessionIds, revokeSession, touchSession,
} from './sessions.js'
export {
  claimCheck, countRegistration, forgetDevices, lockFailureRow, lookUpLogin, markAlerted, readFailures, recordFailure, releaseCheck, resetAccountFailures, resetDeviceFailures,
  type FailureCount, type FailureCounts, type LoginLookup, type ThrottleClock, type ThrottleKeys, type ThrottleScope,
} from './login-throttle.js'
export { insertAccountToken, isLiveAccountToken, issueTokenWithMail, mintMailLinkToken, spendAccountToken, spendAllAccountTokens, type AccountTokenPurpose } from './account-tokens.js'
export {
  claimDueMail, claimForLog, countMailRequest, enqueueMail, markAttemptFailed, markSent, markSkipped, releaseClaim, type ClaimedMail, type MailLink, type MailMessage, type MailRequestCount, type MailRequestScope,
} from './mail-outbox.js'
export { insertPost, listPosts } from './posts.js'
export { changeSigningKeys, listenForSigningKeyChanges, listSigningKeys, signingKeysChannel, type StoredSigningKey } from './signing-keys.js'
export { purgeBatch, purgeTargets, type PurgeTarget } from './purge.js'
export {
  deleteRecoveryCodes, deleteTotpFactor, findLoginChallenge, findTotpFactor, insertLoginChallenge, putPendingTotp, recoveryCodesSummary, replaceRecoveryCodes, spendLoginChallenge, spendRecoveryCode, spendTotpStep,
  type ChallengePurpose, type LoginChallengeRow, type SecondFactors,
} from './second-factors.js'
export { existingEmails, insertImportedUsers, queueImportResetMails, type ImportedUser, type ImportResetMail } from './user-import.js'
export {
  deletePasskeyUnlessLast, findPasskeyByCredentialId, insertPasskey, insertPasskeyChallenge, listPasskeys, recordPasskeyUse, renamePasskey, spendPasskeyChallenge,
  type PasskeyChallengePurpose, type StoredPasskey,
} from './passkeys.js'
export {
  consumeOidcPayload, deleteOidcGrant, deleteOidcPayload, findOidcPayload, findOidcPayloadByUid, upsertOidcPayload,
} from './oidc-payloads.js'
export { deleteOidcClient, findOidcClient, insertOidcClient, listOidcClients, type StoredOidcClient } from './oidc-clients.js'
