/**
 * TOTP (RFC 6238) through `otpauth`: SHA-1, six digits, 30-second steps, the parameters every
 * authenticator app reads from an otpauth:// URI. A code is accepted one step either side of now
 * (clocks drift, a typed code ages); which step matched is returned, so the caller spends it once.
 */
import { Secret, TOTP } from 'otpauth'

/** 160 bits, RFC 4226's recommended secret length. */
const secretBytes = 20
const period = 30
const digits = 6
/** Steps either side of now a code is accepted in. */
const window = 1
/** The issuer an authenticator app shows beside the account. */
const issuer = 'tollbooth'

export interface NewTotpSecret {
  /** The raw secret, to seal. */
  secret: Buffer
  /** Base32, for typing into an app. */
  base32: string
  /** otpauth://totp/..., for a QR code. */
  uri: string
}

export function newTotpSecret (accountLabel: string): NewTotpSecret {
  const secret = new Secret({ size: secretBytes })
  const totp = new TOTP({ issuer, label: accountLabel, secret, algorithm: 'SHA1', digits, period })
  return { secret: Buffer.from(secret.buffer), base32: secret.base32, uri: totp.toString() }
}

/** A six-digit code's shape; anything else is refused before any computation. */
const totpCodePattern = /^[0-9]{6}$/

/** The time step whose code `code` is, within the window around `nowMs`; undefined when none. */
export function matchingTotpStep (secret: Buffer, code: string, nowMs: number): number | undefined {
  if (!totpCodePattern.test(code)) return undefined
  const totpSecret = new Secret({ buffer: Uint8Array.from(secret).buffer })
  const delta = TOTP.validate({ token: code, secret: totpSecret, algorithm: 'SHA1', digits, period, timestamp: nowMs, window })
  if (delta === null) return undefined
  return TOTP.counter({ period, timestamp: nowMs }) + delta
}

/** The code of `nowMs`'s step (tests, and the lab, compute what an app would show). */
export function totpCodeAt (secret: Buffer, nowMs: number): string {
  return TOTP.generate({ secret: new Secret({ buffer: Uint8Array.from(secret).buffer }), algorithm: 'SHA1', digits, period, timestamp: nowMs })
}

/** A secret as its base32 text gives it (tests read the enrolment's answer as an app would). */
export function totpSecretFromBase32 (base32: string): Buffer {
  return Buffer.from(Secret.fromBase32(base32).buffer)
}
