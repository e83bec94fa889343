/**
 * `mixed-storm`: login-storm's crowd of 100 VUs in which a share of the users (`--passkey-share`,
 * default half) sign in with a passkey and the others with their password, on the same accounts
 * (each has both). A user keeps its way in for the whole run, as a person does; the users of each
 * kind are spread evenly over the virtual users' numbers, so a ramp brings both in from the start.
 */
import type { SavedCredential } from 'tollbooth/software-authenticator'
import { accountsWithPasskeys, passkeyEndpoints, signInWithPasskey } from './passkeys.js'
import { rampThenHold, type Account, type Scenario, type VirtualUser } from './scenario.js'

const loginEndpoint = 'POST /auth/login'

/** Whether this virtual user signs in with a passkey: a spread of the users' numbers over 0..99 (37 is prime to 100), under the share. */
export function signsInWithPasskey (vu: Pick<VirtualUser, 'id'>, passkeyShare: number): boolean {
  return ((vu.id * 37) % 100) < passkeyShare * 100
}

export const mixedStorm: Scenario<{ accounts: Account[], credentials: SavedCredential[], passkeyShare: number }> = {
  name: 'mixed-storm',
  description: 'login-storm\'s crowd, a share of the users (--passkey-share, default 50 %) signing in with passkeys and the others with passwords, on the same accounts.',
  endpoints: [loginEndpoint, passkeyEndpoints.options, passkeyEndpoints.verify],
  defaults: { model: 'closed', stages: rampThenHold(100), thinkTimeMs: 0, rate: 10, accounts: 50, passkeyShare: 0.5 },
  async setup (context) {
    return { ...await accountsWithPasskeys(context, 'mixed-storm'), passkeyShare: context.passkeyShare ?? 0.5 }
  },
  async iteration (vu, { accounts, credentials, passkeyShare }) {
    const index = (vu.id + vu.iteration) % accounts.length
    if (signsInWithPasskey(vu, passkeyShare)) {
      const credential = credentials[index]
      return credential !== undefined && await signInWithPasskey(vu, credential)
    }
    const account = accounts[index]
    if (account === undefined) return false
    return (await vu.request(loginEndpoint, { method: 'POST', path: '/api/v1/auth/login', body: account })).ok
  },
}
