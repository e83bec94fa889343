/**
 * The device token on the wire (accounts/sign-in/devices.ts): a browser keeps it as a cookie scoped to
 * the API, or to the OpenID Connect provider's sign-in pages (HttpOnly, SameSite=Strict, Secure
 * outside local development), an API client as the `Tollbooth-Device` header, sent back on its
 * next sign-in.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { deviceCookieName, deviceHeaderName, presentedDeviceToken } from '../accounts/index.js'

export interface DeviceCookieOptions {
  /** Secure (HTTPS only): everywhere but local development on the embedded database. */
  secure: boolean
  maxAgeSeconds: number
  /** Where the browser sends it back: the API's sign-ins (default `/api/v1`), or the OpenID Connect provider's (`/oidc`). */
  path?: string
}

/** The token the client presented: the header first (an API client's), else the cookie. */
export function presentedDevice (request: FastifyRequest): string | undefined {
  const header = request.headers[deviceHeaderName]
  if (typeof header === 'string') return presentedDeviceToken(header)
  return presentedDeviceToken(cookieValue(request.headers.cookie, deviceCookieName))
}

/** Hands the client its device token: as a cookie and in the header, for whichever it keeps. */
export function sendDevice (reply: FastifyReply, token: string, options: DeviceCookieOptions): void {
  void reply.header('set-cookie', deviceCookie(token, options)).header(deviceHeaderName, token)
}

/** The device token's Set-Cookie line. */
export function deviceCookie (token: string, options: DeviceCookieOptions): string {
  return [`${deviceCookieName}=${token}`, `Path=${options.path ?? '/api/v1'}`, `Max-Age=${options.maxAgeSeconds}`, 'HttpOnly', 'SameSite=Strict', ...(options.secure ? ['Secure'] : [])].join('; ')
}

/** One cookie's value from a Cookie header (RFC 6265 section 5.4: `name=value` pairs joined by `; `). */
function cookieValue (header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=')
    if (at !== -1 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim()
  }
  return undefined
}
