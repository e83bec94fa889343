/**
 * `oidc-storm`: login-storm's crowd (100 VUs ramping over a third of the run, then holding) signing
 * in through the OpenID Connect provider instead of POST /auth/login: each login is a fresh
 * browser walking the authorization code flow with PKCE (code-flow.ts), counted when the tokens
 * arrive. Setup registers the accounts and the lab's first-party client (lab-client.ts). A sign-in
 * refused busy (503) is sent again on the same form at the user's next iteration, after its
 * Retry-After for a polite user, at once for a naive one, as the busy page asks.
 */
import { rampThenHold, type Account, type LabOidcClient, type Scenario } from '../scenario.js'
import { finishSignIn, oidcEndpoints, openSignIn, postSignIn, type SignInForm } from './code-flow.js'

/** A sign-in that was refused busy, waiting to be sent again: in the virtual user's state. */
interface Pending { form: SignInForm, account: Account }

export const oidcStorm: Scenario<{ accounts: Account[], client: LabOidcClient }> = {
  name: 'oidc-storm',
  description: 'login-storm\'s crowd (100 VUs ramping over a third of the run) signing in through the OpenID Connect provider: the code flow with PKCE walked over HTTP (authorize, sign-in page, form, redirects, token), a fresh browser each login.',
  endpoints: [oidcEndpoints.authorize, oidcEndpoints.page, oidcEndpoints.signIn, oidcEndpoints.consent, oidcEndpoints.resume, oidcEndpoints.token],
  defaults: { model: 'closed', stages: rampThenHold(100), thinkTimeMs: 0, rate: 10, accounts: 50 },
  serviceEnv: { TOLLBOOTH_OIDC: 'true' },
  async setup (context) {
    const accounts = await context.registerAccounts(context.accounts, 'oidc-storm')
    return { accounts, client: await context.registerOidcClient('oidc-storm') }
  },
  async iteration (vu, { accounts, client }) {
    let pending = vu.state.pending as Pending | undefined
    vu.state.pending = undefined
    if (pending === undefined) {
      const account = accounts[(vu.id + vu.iteration) % accounts.length]
      const form = account === undefined ? undefined : await openSignIn(vu, client)
      if (account === undefined || form === undefined) return false
      pending = { form, account }
    }
    const signedIn = await postSignIn(vu, pending.form, pending.account)
    if (signedIn.status === 503) {
      vu.state.pending = pending
      return false
    }
    if (!signedIn.ok || signedIn.location === undefined) return false
    return await finishSignIn(vu, pending.form, client, signedIn.location)
  },
}
