/**
 * The provider for the key ring's current signing key: oidc-provider reads its keys once, so a new
 * provider is made when the ring's signing key changes (a rotation, seen by every replica). Every
 * provider keeps its state in PostgreSQL, so a flow begun before the change finishes after it.
 */
import type { Provider } from 'oidc-provider'
import type { RingKey } from '../keys/index.js'
import { createOidcProvider, type OidcProviderOptions } from './provider.js'

export class CurrentOidcProvider {
  private provider: Provider | undefined
  private kid: string | undefined

  constructor (private readonly signingKey: () => RingKey, private readonly options: Omit<OidcProviderOptions, 'signing'>) {}

  get (): Provider {
    const key = this.signingKey()
    if (this.provider === undefined || this.kid !== key.kid) {
      if (key.privatePem === undefined) throw new Error('the key ring\'s signing key has no private key')
      this.provider = createOidcProvider({ ...this.options, signing: { kid: key.kid, alg: key.alg, privatePem: key.privatePem } })
      this.kid = key.kid
    }
    return this.provider
  }
}
