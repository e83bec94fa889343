/** The account tables' public face: users, sessions, refresh and mail tokens, the login throttle's counts, second factors, passkeys and imports. */
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
  deleteRecoveryCodes, deleteTotpFactor, findLoginChallenge, findTotpFactor, insertLoginChallenge, putPendingTotp, recoveryCodesSummary, replaceRecoveryCodes, spendLoginChallenge, spendRecoveryCode, spendTotpStep,
  type ChallengePurpose, type LoginChallengeRow, type SecondFactors,
} from './second-factors.js'
export { existingEmails, insertImportedUsers, queueImportResetMails, type ImportedUser, type ImportResetMail } from './user-import.js'
export {
  deletePasskeyUnlessLast, insertPasskey, insertPasskeyChallenge, listPasskeys, recordPasskeyUse, renamePasskey, spendChallengeAndFindPasskey, spendPasskeyChallenge,
  type PasskeyChallengePurpose, type StoredPasskey,
} from './passkeys.js'
