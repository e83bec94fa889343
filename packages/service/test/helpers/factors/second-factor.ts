/** A wall clock the service and the test share, and the TOTP steps a test moves through with it. */
import assert from 'node:assert/strict'
import { totpCodeAt, totpSecretFromBase32 } from '../../../src/accounts/factors/totp.js'
import { request, type TestService } from '../service.js'

/** Date.now() moved on by the test: the service's TOTP steps, challenge lifetimes and throttle windows follow it. */
export function movableWallClock (): { now: () => number, advance: (ms: number) => void } {
  let offsetMs = 0
  return { now: () => Date.now() + offsetMs, advance: (ms) => { offsetMs += ms } }
}

/** One TOTP step. */
export const stepMs = 30_000

/** Enrols and confirms TOTP for the token's user, as an app would from the shown secret; the secret and the recovery codes. */
export async function enrolTotp (service: TestService, token: string, now: () => number): Promise<{ secret: Buffer, recoveryCodes: string[] }> {
  const begun = await request(service, 'POST', '/api/v1/me/factors/totp', { token })
  assert.equal(begun.status, 201, JSON.stringify(begun.body))
  const secret = totpSecretFromBase32(begun.body.secret as string)
  const confirmed = await request(service, 'POST', '/api/v1/me/factors/totp/confirm', { token, body: { code: totpCodeAt(secret, now()) } })
  assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body))
  return { secret, recoveryCodes: confirmed.body.recoveryCodes as string[] }
}

/** The password login's answer: 200 with tokens, or with a challenge. */
export async function passwordLogin (service: TestService, email: string, password: string): Promise<Record<string, any>> {
  const response = await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })
  assert.equal(response.status, 200, JSON.stringify(response.body))
  return response.body as Record<string, any>
}

export async function secondStep (service: TestService, challenge: string, method: 'totp' | 'recovery_code', code: string): Promise<{ status: number, body: any, headers: Headers }> {
  return await request(service, 'POST', '/api/v1/auth/login/second-factor', { body: { challenge, method, code } })
}
