/**
 * Device tokens (OWASP's device cookie): a client that signed in to an account holds a random
 * token, kept server-side as its SHA-256 (db/accounts/login-throttle.ts). A login that presents its
 * account's device token is judged by that device's own failures, never by the account's: guesses
 * from elsewhere cannot lock the owner's known clients out. Browsers keep it as a cookie (HttpOnly,
 * SameSite=Strict, Secure outside local development); API clients send and keep the header.
 */
import { randomToken, secretTokenHash } from '../tokens.js'

/** The cookie a browser keeps the token in, sent back to the auth routes only. */
export const deviceCookieName = 'tollbooth_device'
/** The request and response header of API clients. */
export const deviceHeaderName = 'tollbooth-device'
/** Devices kept per user; the least recently used one gives way past it. */
export const maxDevicesPerUser = 50

/** 32 random bytes, base64url: 43 characters. */
const tokenPattern = /^[A-Za-z0-9_-]{43}$/

export interface DeviceToken {
  token: string
  hash: Buffer
}

export function newDeviceToken (): DeviceToken {
  const token = randomToken()
  return { token, hash: deviceTokenHash(token) }
}

export function deviceTokenHash (token: string): Buffer {
  return secretTokenHash(token)
}

/** The token as a client presented it, if it has the shape of one (anything else is ignored, as no token). */
export function presentedDeviceToken (value: string | undefined): string | undefined {
  return value !== undefined && tokenPattern.test(value) ? value : undefined
}
