/** Signing in through the OpenID Connect provider as a browser does, without one: the oidc-storm scenario and the lab's own client. */
export { oidcStorm } from './oidc-storm.js'
export { registerLabOidcClient } from './lab-client.js'
