/**
 * The passkeys' relying party: its id, its name and the origins allowed to use it, from the
 * settings or, unset, from TOLLBOOTH_PUBLIC_URL. Checked at start: a wrong one would refuse
 * every passkey at its first use.
 */
import net from 'node:net'
import { createError } from '../errors.js'
import type { FlatConfig } from './settings.js'

export interface RelyingParty {
  id: string
  name: string
  origins: string[]
}

type RelyingPartySettings = Pick<FlatConfig, 'publicUrl' | 'passkeyRpId' | 'passkeyRpName' | 'passkeyOrigins'>

/** WebAuthn allows http: on localhost alone (a secure context). */
function isSecureContextOrigin (url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname.endsWith('.localhost')))
}

/**
 * A public URL on a loopback address (development: http://127.0.0.1:3000) as browsers reach it by
 * name: WebAuthn takes no IP address as a relying party id, so passkeys work at http://localhost:<port>.
 */
function byLoopbackName (url: URL): URL {
  const address = url.hostname.replace(/^\[(.*)\]$/, '$1')
  const loopback = net.isIPv4(address) ? address.startsWith('127.') : address === '::1'
  if (!loopback) return url
  const named = new URL(url)
  named.hostname = 'localhost'
  return named
}

function invalid (field: string, message: string): never {
  throw createError('CONFIG_INVALID', message, { field })
}

export function passkeyRelyingParty (c: RelyingPartySettings): RelyingParty {
  const origins = (c.passkeyOrigins ?? '').split(',').map((origin) => origin.trim()).filter((origin) => origin.length > 0)
  // Set explicitly, an origin must be one a browser offers passkeys on; derived from the public URL
  // (an http: address of a development machine, say), it is taken as it is (a loopback address by
  // its name) and the browser decides.
  const explicit = origins.length > 0
  if (!explicit) {
    if (c.publicUrl === undefined) invalid('TOLLBOOTH_PASSKEY_ORIGINS', 'TOLLBOOTH_PASSKEY_ORIGINS (or TOLLBOOTH_PUBLIC_URL) is required for passkeys')
    origins.push(byLoopbackName(new URL(c.publicUrl)).origin)
  }
  const hosts = origins.map((origin) => {
    let url: URL
    try {
      url = new URL(origin)
    } catch {
      return invalid('TOLLBOOTH_PASSKEY_ORIGINS', `TOLLBOOTH_PASSKEY_ORIGINS: "${origin}" is not an origin (scheme://host[:port])`)
    }
    if (url.origin !== origin) invalid('TOLLBOOTH_PASSKEY_ORIGINS', `TOLLBOOTH_PASSKEY_ORIGINS: "${origin}" is not an origin; write it as ${url.origin} (no path, no trailing slash)`)
    if (explicit && !isSecureContextOrigin(url)) invalid('TOLLBOOTH_PASSKEY_ORIGINS', `TOLLBOOTH_PASSKEY_ORIGINS: "${origin}" must be https: (http: only on localhost), where browsers offer passkeys`)
    return url.hostname
  })
  const id = (c.passkeyRpId ?? hosts[0] ?? '').toLowerCase()
  if (c.passkeyRpId !== undefined && !/^[a-z0-9.-]{1,253}$/.test(id)) invalid('TOLLBOOTH_PASSKEY_RP_ID', `TOLLBOOTH_PASSKEY_RP_ID: "${id}" is not a domain`)
  for (const [i, host] of hosts.entries()) {
    if (host !== id && !host.endsWith(`.${id}`)) invalid('TOLLBOOTH_PASSKEY_RP_ID', `TOLLBOOTH_PASSKEY_RP_ID "${id}" is not the host of ${origins[i] ?? host} nor a domain it is under`)
  }
  return { id, name: c.passkeyRpName, origins }
}
