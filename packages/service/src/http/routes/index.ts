/** The http/routes room's public face: what the rest of the service uses of it. */
export { authRoutes, trimEmail } from './auth.js'
export { accountMailRoutes } from './account-mail.js'
export { checkReadiness, healthRoutes, metricsRoute, type MetricsRouteOptions } from './health.js'
export { jwksRoutes } from './jwks.js'
export { postRoutes } from './posts.js'
export { accountRoutes } from './account.js'
export { secondFactorRoutes } from './second-factor.js'
export { passkeyRoutes } from './passkeys.js'
export { accountPageRoutes } from './account-page.js'
/** The OpenID Connect routes, loaded only by a service with TOLLBOOTH_OIDC (they bring oidc-provider). */
export async function loadOidcRoutes (): Promise<typeof import('./oidc.js')['oidcRoutes']> {
  return (await import('./oidc.js')).oidcRoutes
}
