/** Refresh-token rotation with reuse detection, and logout. */
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { createError } from '../../errors.js'
import { withTransaction, findUserById, findTokenFamily, lockRefreshToken, lockSessionForRefresh, lockUserKeyShare, markRotated, revokeSession, touchSession } from '../../db/index.js'
import { hashRefreshToken } from '../tokens.js'
import type { SessionCheck } from '../session-check.js'
import { openSuccessor, sealSuccessor } from './refresh-successor.js'
import type { AuthResult, SessionOpener } from './session-opener.js'

export interface TokenRefreshDeps {
  db: pg.Pool
  /** Told of every session this service revokes, so their access tokens are refused at once. */
  sessions: SessionCheck
  log: FastifyBaseLogger
  opener: SessionOpener
  /** A rotated refresh token presented again within this gets the same successor instead of counting as reuse. */
  refreshGraceSeconds: number
  /** As the sign-in's rule (auth-service.ts): a session of an unverified account ends with it. */
  unverifiedLogin?: 'allow' | 'refuse' | 'hide' | undefined
}

export class TokenRefresh {
  constructor (private readonly deps: TokenRefreshDeps) {}

  /**
   * Rotates a refresh token. Locks the user row (KEY SHARE, as the new token's foreign key does),
   * then the session, then the token (every writer's lock order, db/accounts.ts), so refreshes of a
   * session serialise, a revocation cannot miss the new token, and an account deletion is waited
   * for, not deadlocked with. A rotated token presented again within the grace window gets its
   * sealed successor; later, it is reuse: the session is revoked and the event logged.
   */
  async refresh (refreshToken: string, context: { client?: string } = {}): Promise<AuthResult> {
    const tokenHash = hashRefreshToken(refreshToken)
    type Outcome = { error: 'AUTH_REFRESH_TOKEN_INVALID' | 'EMAIL_NOT_VERIFIED' } | { error: 'AUTH_REFRESH_TOKEN_REUSED', userId: string, sessionId: string } | { result: AuthResult }
    const invalid = { error: 'AUTH_REFRESH_TOKEN_INVALID' } as const
    const outcome = await withTransaction(this.deps.db, async (client): Promise<Outcome> => {
      const family = await findTokenFamily(client, tokenHash)
      if (family === undefined) return invalid
      if (!await lockUserKeyShare(client, family.userId)) return invalid
      const session = await lockSessionForRefresh(client, family.familyId)
      const row = await lockRefreshToken(client, tokenHash)
      const nowMs = Date.now()
      if (session === undefined || row === undefined || session.revokedAt !== null || row.revokedAt !== null ||
        session.expiresAt.getTime() <= nowMs || row.expiresAt.getTime() <= nowMs) return invalid
      const user = await findUserById(client, row.userId)
      if (user === undefined) return invalid
      // A session opened while unverified logins were allowed does not outlive the rule.
      if (user.emailVerifiedAt === null && this.deps.unverifiedLogin === 'refuse') return { error: 'EMAIL_NOT_VERIFIED' }
      if (user.emailVerifiedAt === null && this.deps.unverifiedLogin === 'hide') return invalid
      if (row.rotatedAt !== null) {
        const successor = row.rotatedMsAgo <= this.deps.refreshGraceSeconds * 1000 && row.successorSealed !== null
          ? openSuccessor(refreshToken, row.successorSealed)
          : undefined
        if (successor !== undefined) {
          await touchSession(client, session.id)
          return { result: this.deps.opener.result(user, session.id, successor, session.amr) }
        }
        // A rotated token came back after the window: stolen or replayed. Revoke the session (committed).
        await revokeSession(client, session.userId, session.id, 'refresh_token_reused')
        return { error: 'AUTH_REFRESH_TOKEN_REUSED', userId: session.userId, sessionId: session.id }
      }
      const next = await this.deps.opener.insertToken(client, user.id, session.id, session.expiresAt)
      await markRotated(client, row.id, sealSuccessor(refreshToken, next.token))
      await touchSession(client, session.id)
      return { result: this.deps.opener.result(user, session.id, next.token, session.amr) }
    })
    if ('result' in outcome) return outcome.result
    if (outcome.error === 'AUTH_REFRESH_TOKEN_REUSED') {
      this.deps.sessions.forget([outcome.sessionId])
      // A security event: who and where, never the token.
      this.deps.log.warn({ event: 'refresh_token_reused', userId: outcome.userId, sessionId: outcome.sessionId, address: context.client }, 'refresh token reused after rotation: session revoked')
    }
    throw createError(outcome.error)
  }

  /** Revokes the token's session. Unknown tokens are ignored: logout is idempotent and reveals nothing. */
  async logout (refreshToken: string): Promise<void> {
    const family = await findTokenFamily(this.deps.db, hashRefreshToken(refreshToken))
    if (family === undefined) return
    await revokeSession(this.deps.db, family.userId, family.familyId, 'logout')
    this.deps.sessions.forget([family.familyId])
  }
}
