/**
 * A Firebase project's password hash parameters, given once for the whole import: the text the
 * console shows under "Password hash parameters" (`base64_signer_key: ...,` lines), the same keys
 * as JSON, or the four values on their own (the `--firebase-*` flags). Bounded by Firebase's own
 * ranges before any line is read.
 */
import { createError, isTollboothError } from '../../errors.js'
import { checkFirebaseHashParams, type FirebaseHashParams } from '../../hashing/index.js'

/** The four values as given (flags, or read from a parameters file). */
export interface FirebaseParamsText {
  signerKey?: string | undefined
  saltSeparator?: string | undefined
  rounds?: string | undefined
  memCost?: string | undefined
}

function invalid (message: string): Error {
  return createError('CONFIG_INVALID', `Firebase hash parameters: ${message}`)
}

function base64 (text: string | undefined, what: string): Buffer {
  if (text === undefined) throw invalid(`${what} is missing`)
  const trimmed = text.trim()
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(trimmed) || trimmed.replace(/=+$/, '').length % 4 === 1) throw invalid(`${what} is not base64`)
  return Buffer.from(trimmed, 'base64')
}

function integer (text: string | undefined, what: string): number {
  if (text === undefined || !/^\s*[0-9]{1,3}\s*$/.test(text)) throw invalid(`${what} must be a small integer, got ${text === undefined ? 'nothing' : JSON.stringify(text.slice(0, 20))}`)
  return Number(text)
}

/** `base64_signer_key`, `base64_salt_separator`, `rounds`, `mem_cost` from the console's text or JSON. */
export function parseFirebaseParamsFile (text: string): FirebaseParamsText {
  const values = new Map<string, string>()
  const trimmed = text.trim()
  if (trimmed.startsWith('{')) {
    let json: unknown
    try {
      json = JSON.parse(trimmed)
    } catch (err) {
      throw invalid(`the file is not JSON: ${(err as Error).message}`)
    }
    const object = (typeof json === 'object' && json !== null ? json : {}) as Record<string, unknown>
    // The hash_config object alone, or inside { "hash_config": ... }.
    const config = (typeof object.hash_config === 'object' && object.hash_config !== null ? object.hash_config : object) as Record<string, unknown>
    for (const [key, value] of Object.entries(config)) values.set(key, String(value))
  } else {
    for (const match of trimmed.matchAll(/([a-z0-9_]+)\s*[:=]\s*"?([^",\n]*)"?\s*,?/gi)) values.set(match[1] ?? '', match[2] ?? '')
  }
  const algorithm = values.get('algorithm')
  if (algorithm !== undefined && algorithm.trim().toUpperCase() !== 'SCRYPT') throw invalid(`the project's algorithm is ${algorithm.trim()}, not SCRYPT`)
  return { signerKey: values.get('base64_signer_key'), saltSeparator: values.get('base64_salt_separator'), rounds: values.get('rounds'), memCost: values.get('mem_cost') }
}

/** The parameters, checked: `CONFIG_INVALID` naming what is wrong. */
export function firebaseHashParams (given: FirebaseParamsText): FirebaseHashParams {
  const params: FirebaseHashParams = {
    signerKey: base64(given.signerKey, 'the signer key (base64_signer_key)'),
    saltSeparator: base64(given.saltSeparator, 'the salt separator (base64_salt_separator)'),
    rounds: integer(given.rounds, 'rounds'),
    memCost: integer(given.memCost, 'mem_cost'),
  }
  try {
    checkFirebaseHashParams(params)
  } catch (err) {
    if (isTollboothError(err, 'HASH_PARAMS_OUT_OF_BOUNDS')) throw invalid(err.message.replace("The stored hash's ", ''))
    throw err
  }
  return params
}
