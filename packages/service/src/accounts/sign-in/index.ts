/** The sign-in's public face: registration, password login, the second step, refresh and logout. */
export { AuthService } from './auth-service.js'
export { deviceCookieName, deviceHeaderName, presentedDeviceToken } from './devices.js'
