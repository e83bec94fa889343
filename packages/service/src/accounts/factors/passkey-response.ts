/**
 * The checks of a passkey response that have a coded answer, made before the library's full
 * verification: which challenge it answers, the page's origin, the relying party, user
 * verification. The library (@simplewebauthn/server) then verifies everything again, the
 * signature included; what only it catches is PASSKEY_INVALID.
 */
import { hash, timingSafeEqual } from 'node:crypto'
import { decodeAttestationObject, decodeClientDataJSON, isoBase64URL, parseAuthenticatorData, type ParsedAuthenticatorData } from '@simplewebauthn/server/helpers'
import { createError } from '../../errors.js'
import type { RelyingParty } from '../../config/index.js'

/** What the browser says of the ceremony (clientDataJSON), decoded. */
interface ClientData {
  type: string
  challenge: string
  origin: string
}

function invalid (cause: unknown): never {
  throw createError('PASSKEY_INVALID', undefined, { cause })
}

/** The challenge a response answers, and its page's origin; PASSKEY_INVALID when clientDataJSON is not one, or is of another ceremony. */
export function readClientData (clientDataJSON: string, type: 'webauthn.create' | 'webauthn.get'): ClientData {
  let data: ClientData
  try {
    data = decodeClientDataJSON(clientDataJSON)
  } catch (err) {
    return invalid(err)
  }
  if (data.type !== type || typeof data.challenge !== 'string' || typeof data.origin !== 'string') return invalid(undefined)
  return data
}

/** The authenticator data of an assertion, or of a registration's attestation object; PASSKEY_INVALID when it cannot be read. */
export function readAuthenticatorData (encoded: { authenticatorData: string } | { attestationObject: string }): ParsedAuthenticatorData {
  try {
    const bytes = 'authenticatorData' in encoded
      ? isoBase64URL.toBuffer(encoded.authenticatorData)
      : decodeAttestationObject(isoBase64URL.toBuffer(encoded.attestationObject)).get('authData')
    return parseAuthenticatorData(bytes)
  } catch (err) {
    return invalid(err)
  }
}

/** The coded checks, in the order a client can fix them: origin, relying party, user verification. */
export function assertCeremonyContext (client: ClientData, authData: ParsedAuthenticatorData, rp: RelyingParty): void {
  if (!rp.origins.includes(client.origin)) throw createError('PASSKEY_ORIGIN_MISMATCH')
  const expected = hash('sha256', rp.id, 'buffer')
  if (authData.rpIdHash.length !== expected.length || !timingSafeEqual(authData.rpIdHash, expected)) throw createError('PASSKEY_RP_ID_MISMATCH')
  if (!authData.flags.uv) throw createError('PASSKEY_USER_NOT_VERIFIED')
}
