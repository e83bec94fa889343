/** OidcAccounts on tollbooth's own sessions and users (provider.ts says what it is for). */
import type pg from 'pg'
import { isTollboothError } from '../errors.js'
import { findUserById, revokeSession } from '../db/index.js'
import type { SessionCheck } from '../accounts/index.js'
import type { SignedInSession } from './account-id.js'
import type { OidcAccounts, OidcClaims } from './provider.js'

export class SessionAccounts implements OidcAccounts {
  constructor (private readonly db: pg.Pool, private readonly sessions: SessionCheck) {}

  async claimsOf ({ userId, sessionId }: SignedInSession): Promise<OidcClaims | undefined> {
    try {
      await this.sessions.assertLive(sessionId, userId)
    } catch (err) {
      if (isTollboothError(err, 'AUTH_SESSION_ENDED')) return undefined
      throw err
    }
    const user = await findUserById(this.db, userId)
    if (user === undefined) return undefined
    return { email: user.email, emailVerified: user.emailVerifiedAt !== null, name: user.name ?? undefined }
  }

  async endSession ({ userId, sessionId }: SignedInSession): Promise<void> {
    await revokeSession(this.db, userId, sessionId, 'logout')
    this.sessions.forget([sessionId])
  }
}
