/**
 * `tollbooth/software-authenticator`: a software WebAuthn authenticator (ES256, attestation
 * "none") for the service's tests and the lab's passkey scenarios: it answers a service's
 * registration and authentication options as a browser with a platform authenticator would, with
 * every input a test needs to get wrong on purpose (origin, relying party id, counter, user
 * verification) in its hands. Keys live in memory, made with node:crypto; `save()` and
 * `SoftwareAuthenticator.restore()` carry a credential to another thread (the lab's generators).
 * Never loaded by `tollbooth serve`.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, type JsonWebKey, type KeyObject } from 'node:crypto'
import { isoCBOR } from '@simplewebauthn/server/helpers'

/** The fields of a service's registration options this authenticator reads (PublicKeyCredentialCreationOptionsJSON). */
export interface CreationOptions {
  challenge: string
  rp: { id?: string | undefined }
  user: { id: string }
}

/** The fields of a service's authentication options this authenticator reads (PublicKeyCredentialRequestOptionsJSON). */
export interface RequestOptions {
  challenge: string
  rpId?: string | undefined
}

/** What navigator.credentials.create() hands a page, as JSON (RegistrationResponseJSON). */
export interface RegistrationResponse {
  id: string
  rawId: string
  type: 'public-key'
  response: { clientDataJSON: string, attestationObject: string, transports: string[] }
  clientExtensionResults: Record<string, never>
  authenticatorAttachment: 'platform'
}

/** What navigator.credentials.get() hands a page, as JSON (AuthenticationResponseJSON). */
export interface AuthenticationResponse {
  id: string
  rawId: string
  type: 'public-key'
  response: { clientDataJSON: string, authenticatorData: string, signature: string, userHandle: string }
  clientExtensionResults: Record<string, never>
  authenticatorAttachment: 'platform'
}

/** One ceremony's deviations from the authenticator's settings. */
export interface CeremonyOverrides {
  /** The origin the "browser" reports in clientDataJSON. */
  origin?: string
  /** The relying party id whose SHA-256 goes into the authenticator data. */
  rpId?: string
  /** The counter this assertion carries (the authenticator's own is set to it). */
  signCount?: number
  /** Whether the UV flag is set. */
  userVerified?: boolean
  /** The challenge signed, instead of the options'. */
  challenge?: string
}

export interface SoftwareAuthenticatorOptions {
  /** The origin reported in clientDataJSON, e.g. https://app.example.com. */
  origin: string
  /** Default: the options' rp.id / rpId, else the origin's host. */
  rpId?: string
  /** The counter before the first ceremony; each assertion adds one. 0 and `counterStep: 0`: an authenticator that keeps no counter. */
  signCount?: number
  counterStep?: number
  /** Whether the user is verified (PIN, biometrics): the UV flag. Default true. */
  userVerified?: boolean
  /** Backup eligible and backed up (a synced passkey): the BE and BS flags. Default false. */
  backupEligible?: boolean
  backedUp?: boolean
}

/**
 * A registered credential as plain data (structured-clone and JSON friendly): what another thread
 * needs to sign assertions with it. It holds the private key: keep it where the tests' keys are.
 */
export interface SavedCredential {
  options: SoftwareAuthenticatorOptions
  /** base64url. */
  credentialId: string
  /** The P-256 private key as a JWK (d, x, y). */
  privateKeyJwk: JsonWebKey
  signCount: number
  userHandle: string | undefined
}

const flagUserPresent = 0x01
const flagUserVerified = 0x04
const flagBackupEligible = 0x08
const flagBackedUp = 0x10
const flagAttestedData = 0x40
/** COSE: kty EC2, alg ES256, crv P-256 (RFC 9053). */
const coseKty = 1
const coseAlg = 3
const coseCrv = -1
const coseX = -2
const coseY = -3

function b64url (bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64url')
}

function sha256 (data: Uint8Array | string): Buffer {
  return createHash('sha256').update(data).digest()
}

/** One credential: a P-256 key pair, its id, and the user handle it was made for. */
export class SoftwareAuthenticator {
  readonly credentialId: Buffer
  readonly #privateKey: KeyObject
  readonly #publicKey: KeyObject
  origin: string
  rpId: string | undefined
  signCount: number
  counterStep: number
  userVerified: boolean
  backupEligible: boolean
  backedUp: boolean
  /** base64url user handle the service gave at registration; what a discoverable sign-in returns. */
  userHandle: string | undefined

  constructor (options: SoftwareAuthenticatorOptions, key?: { credentialId: Buffer, privateKey: KeyObject }) {
    if (key === undefined) {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      this.credentialId = randomBytes(32)
      this.#privateKey = privateKey
      this.#publicKey = publicKey
    } else {
      this.credentialId = key.credentialId
      this.#privateKey = key.privateKey
      this.#publicKey = createPublicKey(key.privateKey)
    }
    this.origin = options.origin
    this.rpId = options.rpId
    this.signCount = options.signCount ?? 0
    this.counterStep = options.counterStep ?? 1
    this.userVerified = options.userVerified ?? true
    this.backupEligible = options.backupEligible ?? false
    this.backedUp = options.backedUp ?? false
  }

  /** The same credential, counter and settings again, from `save()`'s data (in another thread, say). */
  static restore (saved: SavedCredential): SoftwareAuthenticator {
    const privateKey = createPrivateKey({ key: saved.privateKeyJwk, format: 'jwk' })
    if (privateKey.asymmetricKeyType !== 'ec' || privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new TypeError('a saved credential holds a P-256 private key')
    const authenticator = new SoftwareAuthenticator(saved.options, { credentialId: Buffer.from(saved.credentialId, 'base64url'), privateKey })
    authenticator.signCount = saved.signCount
    authenticator.userHandle = saved.userHandle
    return authenticator
  }

  /** The credential as plain data, for `SoftwareAuthenticator.restore()`: its key, counter, user handle and settings as they are now. */
  save (): SavedCredential {
    const options: SoftwareAuthenticatorOptions = {
      origin: this.origin,
      ...(this.rpId === undefined ? {} : { rpId: this.rpId }),
      counterStep: this.counterStep,
      userVerified: this.userVerified,
      backupEligible: this.backupEligible,
      backedUp: this.backedUp,
    }
    return { options, credentialId: this.id, privateKeyJwk: this.#privateKey.export({ format: 'jwk' }), signCount: this.signCount, userHandle: this.userHandle }
  }

  /** The credential's id as the service lists it. */
  get id (): string {
    return b64url(this.credentialId)
  }

  /** navigator.credentials.create(): a new credential for the options' user, attested with "none". */
  createCredential (options: CreationOptions, overrides: CeremonyOverrides = {}): RegistrationResponse {
    this.userHandle = options.user.id
    const rpId = overrides.rpId ?? this.rpId ?? options.rp.id ?? new URL(this.origin).hostname
    const clientDataJSON = this.#clientData('webauthn.create', overrides.challenge ?? options.challenge, overrides.origin)
    const idLength = Buffer.alloc(2)
    idLength.writeUInt16BE(this.credentialId.length)
    const attested = Buffer.concat([Buffer.alloc(16), idLength, this.credentialId, this.#coseKey()])
    const authData = this.#authenticatorData(rpId, overrides, flagAttestedData, attested)
    const attestationObject = isoCBOR.encode(new Map<string, Uint8Array | string | Map<string, never>>([['fmt', 'none'], ['attStmt', new Map<string, never>()], ['authData', new Uint8Array(authData)]]))
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: { clientDataJSON: b64url(clientDataJSON), attestationObject: b64url(attestationObject), transports: ['internal'] },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    }
  }

  /** navigator.credentials.get(): an assertion over the options' challenge; the counter moves on by `counterStep` (or to `overrides.signCount`). */
  getAssertion (options: RequestOptions, overrides: CeremonyOverrides = {}): AuthenticationResponse {
    if (this.userHandle === undefined) throw new Error('this credential was never registered (createCredential first)')
    const rpId = overrides.rpId ?? this.rpId ?? options.rpId ?? new URL(this.origin).hostname
    const clientDataJSON = this.#clientData('webauthn.get', overrides.challenge ?? options.challenge, overrides.origin)
    const authData = this.#authenticatorData(rpId, overrides, 0)
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), this.#privateKey)
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: { clientDataJSON: b64url(clientDataJSON), authenticatorData: b64url(authData), signature: b64url(signature), userHandle: this.userHandle },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    }
  }

  #clientData (type: string, challenge: string, origin: string | undefined): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin: origin ?? this.origin, crossOrigin: false }))
  }

  /** rpIdHash (32) | flags (1) | signCount (4, big-endian) | attested credential data. */
  #authenticatorData (rpId: string, overrides: CeremonyOverrides, extraFlags: number, attested: Buffer = Buffer.alloc(0)): Buffer {
    if (overrides.signCount !== undefined) this.signCount = overrides.signCount
    else if (attested.length === 0) this.signCount += this.counterStep
    let flags = flagUserPresent | extraFlags
    if (overrides.userVerified ?? this.userVerified) flags |= flagUserVerified
    if (this.backupEligible) flags |= flagBackupEligible
    if (this.backedUp) flags |= flagBackedUp
    const counter = Buffer.alloc(4)
    counter.writeUInt32BE(this.signCount)
    return Buffer.concat([sha256(rpId), Buffer.from([flags]), counter, attested])
  }

  #coseKey (): Uint8Array {
    const jwk = this.#publicKey.export({ format: 'jwk' })
    return isoCBOR.encode(new Map<number, number | Uint8Array>([
      [coseKty, 2], [coseAlg, -7], [coseCrv, 1],
      [coseX, new Uint8Array(Buffer.from(jwk.x ?? '', 'base64url'))], [coseY, new Uint8Array(Buffer.from(jwk.y ?? '', 'base64url'))],
    ]))
  }
}
