/** The second factors' public face: TOTP, recovery codes and passkeys, their checks and their management. */
export { SecondFactorCheck } from './second-factor-check.js'
export { SecondFactorService } from './second-factor-service.js'
export { PasskeyService } from './passkey-service.js'
