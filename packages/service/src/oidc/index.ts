/** The OpenID Connect provider room's public face: the provider, its storage, its clients. */
export { CurrentOidcProvider } from './current-provider.js'
export { oidcMountPath } from './provider.js'
export { accountIdOf } from './account-id.js'
export { SessionAccounts } from './session-accounts.js'
export { addClient, clientAuthMethods, listClients, removeClient, type ClientAuthMethod } from './clients.js'
export { applyClientsFile, type ClientsFileReport } from './clients-file.js'
export { noteClientAddress } from './registration-throttle.js'
