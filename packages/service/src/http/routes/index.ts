/** The http/routes room's public face: what the rest of the service uses of it. */
export { authRoutes, trimEmail } from './auth.js'
export { accountMailRoutes } from './account-mail.js'
export { checkReadiness, healthRoutes, metricsRoute, type MetricsRouteOptions } from './health.js'
export { jwksRoutes } from './jwks.js'
export { postRoutes } from './posts.js'
export { accountRoutes } from './account.js'
export { secondFactorRoutes } from './second-factor.js'
export { passkeyRoutes } from './passkeys.js'
