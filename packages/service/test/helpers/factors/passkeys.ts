/** A service's passkey ceremonies driven by the software authenticator, over real HTTP. */
import assert from 'node:assert/strict'
import { SoftwareAuthenticator, type CeremonyOverrides } from '../../../src/software-authenticator/index.js'
import { request, type JsonResponse } from '../service.js'

/** The relying party the passkey tests' services are set to. */
export const testRelyingParty = { id: 'tollbooth.test', origin: 'https://app.tollbooth.test' }
export const testPasskeyConfig = { passkeyRpId: testRelyingParty.id, passkeyOrigins: testRelyingParty.origin }

export function newAuthenticator (options: { signCount?: number, counterStep?: number, backupEligible?: boolean, backedUp?: boolean } = {}): SoftwareAuthenticator {
  return new SoftwareAuthenticator({ origin: testRelyingParty.origin, ...options })
}

/** Registers the authenticator's credential for the signed-in user; the answer of POST /me/passkeys. */
export async function addPasskey (service: { url: string }, accessToken: string, authenticator: SoftwareAuthenticator, overrides: CeremonyOverrides & { name?: string } = {}): Promise<JsonResponse> {
  const options = await request(service, 'POST', '/api/v1/me/passkeys/options', { token: accessToken })
  assert.equal(options.status, 200, JSON.stringify(options.body))
  const { name, ...ceremony } = overrides
  const response = authenticator.createCredential(options.body, ceremony)
  return await request(service, 'POST', '/api/v1/me/passkeys', { token: accessToken, body: { response, ...(name === undefined ? {} : { name }) } })
}

/** Fresh sign-in options (no email), then the authenticator's assertion to them: the answer of POST /auth/passkey/verify. */
export async function signInWithPasskey (service: { url: string }, authenticator: SoftwareAuthenticator, overrides: CeremonyOverrides = {}): Promise<JsonResponse> {
  const options = await request(service, 'POST', '/api/v1/auth/passkey/options')
  assert.equal(options.status, 200, JSON.stringify(options.body))
  return await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: authenticator.getAssertion(options.body, overrides) } })
}

export function errorOf (response: JsonResponse): [number, string | undefined] {
  return [response.status, response.body?.error?.code]
}
