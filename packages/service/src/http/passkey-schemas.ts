/**
 * The passkey routes' schemas (WebAuthn's JSON forms, as navigator.credentials' `toJSON()` and
 * @simplewebauthn/browser give them). Options are answered with every field the library sets;
 * responses keep the fields a browser adds (extensions, hints) so that a newer browser is not refused.
 */
import { Type } from '@sinclair/typebox'

/** base64url without padding, as WebAuthn's JSON forms carry binary. */
function Base64Url (maxLength: number, description?: string): ReturnType<typeof Type.String> {
  return Type.String({ minLength: 1, maxLength, pattern: '^[A-Za-z0-9_-]+$', ...(description === undefined ? {} : { description }) })
}

const Descriptor = Type.Object({
  id: Type.String(),
  type: Type.String(),
  transports: Type.Optional(Type.Array(Type.String())),
}, { additionalProperties: true })

export const PasskeyCreationOptions = Type.Object({
  challenge: Type.String({ description: 'base64url; single use, valid for TOLLBOOTH_PASSKEY_CHALLENGE_TTL_SECONDS' }),
  rp: Type.Object({ id: Type.Optional(Type.String()), name: Type.String() }, { additionalProperties: true }),
  user: Type.Object({ id: Type.String({ description: 'The user handle (base64url): 16 bytes, no personal data' }), name: Type.String(), displayName: Type.String() }, { additionalProperties: true }),
  pubKeyCredParams: Type.Array(Type.Object({ type: Type.String(), alg: Type.Integer() }, { additionalProperties: true })),
  timeout: Type.Optional(Type.Integer()),
  excludeCredentials: Type.Optional(Type.Array(Descriptor)),
  authenticatorSelection: Type.Optional(Type.Object({}, { additionalProperties: true })),
  attestation: Type.Optional(Type.String()),
  extensions: Type.Optional(Type.Object({}, { additionalProperties: true })),
  hints: Type.Optional(Type.Array(Type.String())),
}, { $id: 'PasskeyCreationOptions', additionalProperties: true, description: 'PublicKeyCredentialCreationOptionsJSON: give it to navigator.credentials.create() (PublicKeyCredential.parseCreationOptionsFromJSON)' })

export const PasskeyRequestOptions = Type.Object({
  challenge: Type.String({ description: 'base64url; single use, valid for TOLLBOOTH_PASSKEY_CHALLENGE_TTL_SECONDS' }),
  rpId: Type.Optional(Type.String()),
  timeout: Type.Optional(Type.Integer()),
  userVerification: Type.Optional(Type.String()),
  allowCredentials: Type.Optional(Type.Array(Descriptor, { description: 'Absent for a sign-in with no email: the browser offers the passkeys it holds' })),
  extensions: Type.Optional(Type.Object({}, { additionalProperties: true })),
  hints: Type.Optional(Type.Array(Type.String())),
}, { $id: 'PasskeyRequestOptions', additionalProperties: true, description: 'PublicKeyCredentialRequestOptionsJSON: give it to navigator.credentials.get() (PublicKeyCredential.parseRequestOptionsFromJSON)' })

const credentialFields = {
  id: Base64Url(1400, 'The credential id'),
  rawId: Base64Url(1400),
  type: Type.Literal('public-key'),
  clientExtensionResults: Type.Object({}, { additionalProperties: true }),
  authenticatorAttachment: Type.Optional(Type.String({ maxLength: 32 })),
}

const PasskeyRegistrationResponse = Type.Object({
  ...credentialFields,
  response: Type.Object({
    clientDataJSON: Base64Url(8192),
    attestationObject: Base64Url(32768),
    transports: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 16 })),
  }, { additionalProperties: true }),
}, { additionalProperties: true, description: 'RegistrationResponseJSON: what navigator.credentials.create() gives, as JSON (PublicKeyCredential.toJSON())' })

export const PasskeyAuthenticationResponse = Type.Object({
  ...credentialFields,
  response: Type.Object({
    clientDataJSON: Base64Url(8192),
    authenticatorData: Base64Url(8192),
    signature: Base64Url(1024),
    userHandle: Type.Optional(Base64Url(128)),
  }, { additionalProperties: true }),
}, { additionalProperties: true, description: 'AuthenticationResponseJSON: what navigator.credentials.get() gives, as JSON (PublicKeyCredential.toJSON())' })

const PasskeyName = Type.String({ minLength: 1, maxLength: 64, pattern: '^(?!\\s*$)[^\\u0000]*$', description: 'A name for its owner to tell passkeys apart' })

export const RegisterPasskeyBody = Type.Object({
  response: PasskeyRegistrationResponse,
  name: Type.Optional(PasskeyName),
}, { additionalProperties: false })

export const PasskeySignInBody = Type.Object({ response: PasskeyAuthenticationResponse }, { additionalProperties: false })

export const RenamePasskeyBody = Type.Object({ name: PasskeyName }, { additionalProperties: false })

export const PasskeyParams = Type.Object({ id: Type.String({ format: 'uuid' }) })

export const Passkey = Type.Object({
  id: Type.String({ format: 'uuid' }),
  credentialId: Type.String({ description: 'base64url, as the browser names it' }),
  name: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Its last sign-in' }),
  backupEligible: Type.Boolean({ description: 'The credential may be synced to other devices (a synced passkey)' }),
  backedUp: Type.Boolean({ description: 'The credential is synced now' }),
  transports: Type.Array(Type.String()),
}, { $id: 'Passkey' })

export const PasskeyList = Type.Object({ items: Type.Array(Type.Ref('Passkey')) })
