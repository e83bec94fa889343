/**
 * Passkeys for the passkey scenarios: registered in setup for accounts the lab made (one new
 * credential an account a run, signed by tollbooth/software-authenticator's software
 * authenticator), and a sign-in as a page makes it (options, then the assertion). A credential
 * travels to the generator threads as plain data and is restored once per thread. Its counter
 * stays 0, as a synced passkey's does: the virtual users of every thread sign with it at once.
 */
import { SoftwareAuthenticator, type SavedCredential } from 'tollbooth/software-authenticator'
import type { LabResponse } from '../http/index.js'
import type { Account, SetupContext, VirtualUser } from './scenario.js'

export const passkeyEndpoints = { options: 'POST /auth/passkey/options', verify: 'POST /auth/passkey/verify' } as const

interface ServiceError { error?: { code?: string, message?: string } }

function refusal (response: LabResponse): string {
  const error = (response.body as ServiceError | undefined)?.error
  return response.status === null ? `${response.failure ?? 'failed'} (${response.detail ?? ''})` : `${response.status}${error?.code === undefined ? '' : ` ${error.code}: ${error.message ?? ''}`}`
}

/**
 * The page origins the lab's authenticator reports, tried in turn at the first registration: a
 * page on the relying party's own host, over https, then http (a service the lab starts has the
 * public URL http://127.0.0.1, whose relying party is localhost and page origin http://localhost).
 * A service that allows neither refuses them (PASSKEY_ORIGIN_MISMATCH).
 */
function candidateOrigins (rpId: string): string[] {
  return [`https://${rpId}`, `http://${rpId}`]
}

/** Registers a new passkey for each account (signed in with its token); the credentials, in the accounts' order. */
async function registerPasskeys (context: SetupContext, tokens: readonly string[]): Promise<SavedCredential[]> {
  let origins: string[] | undefined
  const credentials: SavedCredential[] = []
  for (const [index, token] of tokens.entries()) {
    for (;;) {
      const options = await context.send({ method: 'POST', path: '/api/v1/me/passkeys/options', token })
      const creation = options.body as { challenge: string, rp: { id?: string }, user: { id: string } } | undefined
      if (!options.ok || creation === undefined) throw new Error(`setup: passkey options for account ${index} failed: ${refusal(options)}`)
      origins ??= candidateOrigins(creation.rp.id ?? '')
      const origin = origins[0]
      if (origin === undefined) throw new Error('setup: the service refused every page origin the lab tried for its passkeys; it must allow https://<its relying party id> or http://<it> (TOLLBOOTH_PASSKEY_ORIGINS)')
      const authenticator = new SoftwareAuthenticator({ origin, signCount: 0, counterStep: 0 })
      const registered = await context.send({ method: 'POST', path: '/api/v1/me/passkeys', token, body: { response: authenticator.createCredential(creation), name: 'tollbooth lab' } })
      if (registered.ok) {
        // Found: the other accounts use it at once.
        origins = [origin]
        credentials.push(authenticator.save())
        break
      }
      if ((registered.body as ServiceError | undefined)?.error?.code !== 'PASSKEY_ORIGIN_MISMATCH' || credentials.length > 0) throw new Error(`setup: registering a passkey for account ${index} failed: ${refusal(registered)}`)
      origins.shift()
    }
  }
  context.log(`setup: ${credentials.length} passkeys registered (page origin ${origins?.[0] ?? 'none'})`)
  return credentials
}

/** Registers (or finds, from an earlier run) `context.accounts` accounts under `label`, signs them in, and gives each a new passkey. */
export async function accountsWithPasskeys (context: SetupContext, label: string): Promise<{ accounts: Account[], credentials: SavedCredential[] }> {
  const accounts = await context.registerAccounts(context.accounts, label)
  return { accounts, credentials: await registerPasskeys(context, await context.loginAccounts(accounts)) }
}

/** This thread's authenticators, restored once from the setup's data. */
const restored = new Map<string, SoftwareAuthenticator>()

function authenticatorOf (credential: SavedCredential): SoftwareAuthenticator {
  let authenticator = restored.get(credential.credentialId)
  if (authenticator === undefined) {
    authenticator = SoftwareAuthenticator.restore(credential)
    restored.set(credential.credentialId, authenticator)
  }
  return authenticator
}

/** A discoverable sign-in, no email typed: fresh options, then the credential's assertion to them; achieved when a session opened. */
export async function signInWithPasskey (vu: VirtualUser, credential: SavedCredential): Promise<boolean> {
  const options = await vu.request(passkeyEndpoints.options, { method: 'POST', path: '/api/v1/auth/passkey/options' })
  if (!options.ok) return false
  const response = authenticatorOf(credential).getAssertion(options.body as { challenge: string, rpId?: string })
  return (await vu.request(passkeyEndpoints.verify, { method: 'POST', path: '/api/v1/auth/passkey/verify', body: { response } })).ok
}
