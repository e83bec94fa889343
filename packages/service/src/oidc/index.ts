/** The OpenID Connect provider room's public face: the provider, its storage, its clients. */
export { CurrentOidcProvider } from './current-provider.js'
export { interactionTtlSeconds, oidcMountPath, type OidcAccounts, type OidcClaims, type OidcPages } from './provider.js'
export { accountIdOf, sessionOfAccountId, type SignedInSession } from './account-id.js'
export { SessionAccounts } from './session-accounts.js'
export { addClient, clientAuthMethods, listClients, removeClient, type ClientAuthMethod, type ClientRegistration, type RegisteredClient } from './clients.js'
