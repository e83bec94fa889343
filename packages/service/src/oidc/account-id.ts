/**
 * The provider's account id names the tollbooth session a sign-in opened as well as its user:
 * `<user id>:<session id>`. Every token the provider issues carries it, so each use of one checks
 * that session, and ending the session (/me/sessions, a password change, logout) ends them.
 * The subject (`sub`) the clients see is the user id alone (provider.ts's `pairwiseIdentifier`).
 */
export interface SignedInSession {
  userId: string
  sessionId: string
}

export function accountIdOf (session: SignedInSession): string {
  return `${session.userId}:${session.sessionId}`
}

/** Undefined for a malformed id (never issued by this service). */
export function sessionOfAccountId (accountId: string): SignedInSession | undefined {
  const [userId, sessionId, extra] = accountId.split(':')
  if (userId === undefined || sessionId === undefined || extra !== undefined || userId.length === 0 || sessionId.length === 0) return undefined
  return { userId, sessionId }
}
