/**
 * `passkey-storm`: login-storm's crowd (100 VUs ramping over a third of the run, then holding),
 * each virtual user signing in with a passkey instead of a password: options, then an assertion
 * the lab's software authenticator signs. Setup registers a passkey for each account. No
 * password hash runs during the load.
 */
import type { SavedCredential } from 'tollbooth/software-authenticator'
import { accountsWithPasskeys, passkeyEndpoints, signInWithPasskey } from './passkeys.js'
import { rampThenHold, type Scenario } from './scenario.js'

export const passkeyStorm: Scenario<{ credentials: SavedCredential[] }> = {
  name: 'passkey-storm',
  description: 'login-storm\'s crowd (100 VUs ramping over a third of the run) signing in with passkeys registered in setup: options, then an assertion.',
  endpoints: [passkeyEndpoints.options, passkeyEndpoints.verify],
  defaults: { model: 'closed', stages: rampThenHold(100), thinkTimeMs: 0, rate: 10, accounts: 50 },
  async setup (context) {
    return { credentials: (await accountsWithPasskeys(context, 'passkey-storm')).credentials }
  },
  async iteration (vu, { credentials }) {
    const credential = credentials[(vu.id + vu.iteration) % credentials.length]
    if (credential === undefined) return false
    return await signInWithPasskey(vu, credential)
  },
}
