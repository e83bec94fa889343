/**
 * Opens a session: the session row, its first refresh token and the client's device in one
 * statement, and the answer a client gets (the user, an access token, the refresh token).
 */
import { isIP } from 'node:net'
import { insertRefreshToken, insertSessionWithToken, publicUser, type Queryable, type User } from '../../db/index.js'
import { newRefreshToken, newTokenFamily, type AccessTokens, type NewRefreshToken } from '../tokens.js'
import { maxDevicesPerUser } from './devices.js'

export interface AuthResult {
  user: ReturnType<typeof publicUser>
  accessToken: string
  refreshToken: string
  expiresIn: number
}

/** A sign-in's answer and the device token its client keeps (devices.ts), which the route sends as a cookie and a header, never in the body. */
export interface SignedIn {
  result: AuthResult
  deviceToken: string
}

/** What a second step records of its request in the session it opens. */
export interface SignInRequest {
  userAgent?: string | undefined
  client?: string | undefined
  /** The device token the client presented (devices.ts), if any. */
  deviceToken?: string | undefined
}

/** The client address a session records: an IP address or nothing (behind a proxy, X-Forwarded-For is the client's text). */
export function sessionAddress (client: string | undefined): string | null {
  return client !== undefined && isIP(client) !== 0 ? client : null
}

export interface SessionOpenerDeps {
  accessTokens: AccessTokens
  refreshTokenTtlSeconds: number
  /** A session's absolute lifetime: no refresh token of it expires later. */
  sessionMaxLifetimeSeconds: number
  /** A device token's lifetime, renewed at each sign-in from the device. */
  deviceTtlDays: number
}

export class SessionOpener {
  constructor (private readonly deps: SessionOpenerDeps) {}

  /**
   * A session, its first refresh token and the client's device (remembered, or renewed), in one
   * statement: on the pool (a login), or in a transaction (register, a second step). `amr`: how it signed in.
   */
  async open (db: Queryable, user: User, context: SignInRequest, device: { hash: Buffer }, amr: readonly string[]): Promise<AuthResult> {
    const sessionId = newTokenFamily()
    const expiresAt = new Date(Date.now() + this.deps.sessionMaxLifetimeSeconds * 1000)
    const refresh = newRefreshToken()
    await insertSessionWithToken(db,
      { id: sessionId, userId: user.id, expiresAt, userAgent: context.userAgent ?? null, address: sessionAddress(context.client), amr },
      { tokenHash: refresh.tokenHash, expiresAt: this.tokenExpiresAt(expiresAt) },
      { tokenHash: device.hash, expiresAt: new Date(Date.now() + this.deps.deviceTtlDays * 86_400_000), maxDevicesPerUser })
    return this.result(user, sessionId, refresh.token, amr)
  }

  /** A new refresh token's end: its own lifetime or the session's end, whichever comes first. */
  private tokenExpiresAt (sessionExpiresAt: Date): Date {
    return new Date(Math.min(Date.now() + this.deps.refreshTokenTtlSeconds * 1000, sessionExpiresAt.getTime()))
  }

  /** The next refresh token of a session (a rotation). */
  async insertToken (db: Queryable, userId: string, sessionId: string, sessionExpiresAt: Date): Promise<NewRefreshToken> {
    const refresh = newRefreshToken()
    await insertRefreshToken(db, { tokenHash: refresh.tokenHash, familyId: sessionId, userId, expiresAt: this.tokenExpiresAt(sessionExpiresAt) })
    return refresh
  }

  /** The answer of a sign-in or a refresh: the user, a new access token and the refresh token. */
  result (user: User, sessionId: string, refreshToken: string, amr: readonly string[]): AuthResult {
    return {
      user: publicUser(user),
      accessToken: this.deps.accessTokens.sign(user.id, sessionId, amr),
      refreshToken,
      expiresIn: this.deps.accessTokens.ttlSeconds,
    }
  }
}
