/**
 * Passkeys (WebAuthn, through @simplewebauthn/server): registration for a signed-in user, and
 * assertions that sign in with no email typed (discoverable credentials: the credential id and
 * its user handle name the account) or complete a second step for a known account. Each
 * ceremony's challenge is kept in PostgreSQL and spent by its first verification; a check costs
 * one signature verify, never a password hash.
 */
import { randomBytes } from 'node:crypto'
import type pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import {
  generateAuthenticationOptions, generateRegistrationOptions, verifyAuthenticationResponse, verifyRegistrationResponse,
  type AuthenticationResponseJSON, type PublicKeyCredentialCreationOptionsJSON, type PublicKeyCredentialRequestOptionsJSON, type RegistrationResponseJSON,
} from '@simplewebauthn/server'
import { createError } from '../../errors.js'
import type { RelyingParty } from '../../config/index.js'
import {
  deletePasskeyUnlessLast, findUserById, insertPasskey, insertPasskeyChallenge, listPasskeys, recordPasskeyUse, renamePasskey,
  revokeAllSessionIds, spendChallengeAndFindPasskey, spendPasskeyChallenge, withTransaction, type PasskeyChallengePurpose, type StoredPasskey, type User,
} from '../../db/index.js'
import { assertCeremonyContext, readAuthenticatorData, readClientData } from './passkey-response.js'
import type { Caller } from '../account-service.js'
import type { SessionCheck } from '../session-check.js'
import { secretTokenHash } from '../tokens.js'

/** COSE algorithms accepted: ES256, EdDSA, RS256 (what platform authenticators and keys make). */
const supportedAlgorithmIds = [-7, -8, -257]
/** The name a passkey gets when its registration gives none. */
const defaultPasskeyName = 'Passkey'

export interface PasskeyServiceDeps {
  db: pg.Pool
  relyingParty: RelyingParty
  challengeTtlSeconds: number
  /** Told of the sessions a new or removed passkey ends. */
  sessions: SessionCheck
  log: FastifyBaseLogger
}

/** A passkey as its owner sees it: never its public key. */
export interface PasskeyView {
  id: string
  credentialId: string
  name: string
  createdAt: string
  lastUsedAt: string | null
  backupEligible: boolean
  backedUp: boolean
  transports: string[]
}

/** A verified assertion: whose account (as read with the passkey), with which passkey, and how it counts (RFC 8176 amr). */
export interface VerifiedPasskey {
  user: User
  passkeyId: string
  /**
   * `hwk` for a device-bound credential, `swk` for one that may be synced (backup eligible: its key
   * leaves the device); `user` (the authenticator verified the user) and `mfa`: possession and
   * verification, two factors in one gesture.
   */
  amr: string[]
}

function view (passkey: StoredPasskey): PasskeyView {
  return {
    id: passkey.id,
    credentialId: passkey.credentialId.toString('base64url'),
    name: passkey.name,
    createdAt: passkey.createdAt.toISOString(),
    lastUsedAt: passkey.lastUsedAt?.toISOString() ?? null,
    backupEligible: passkey.backupEligible,
    backedUp: passkey.backedUp,
    transports: passkey.transports,
  }
}

/** A user's WebAuthn user handle: the 16 bytes of their id (no personal data), base64url as userHandle comes back. */
function userHandle (userId: string): Buffer {
  return Buffer.from(userId.replaceAll('-', ''), 'hex')
}

function passkeyAmr (passkey: { backupEligible: boolean }): string[] {
  return [passkey.backupEligible ? 'swk' : 'hwk', 'user', 'mfa']
}

export class PasskeyService {
  constructor (private readonly deps: PasskeyServiceDeps) {}

  private async issueChallenge (purpose: PasskeyChallengePurpose, userId: string | null): Promise<Buffer> {
    const challenge = randomBytes(32)
    await insertPasskeyChallenge(this.deps.db, {
      hash: secretTokenHash(challenge.toString('base64url')), purpose, userId, expiresAt: new Date(Date.now() + this.deps.challengeTtlSeconds * 1000),
    })
    return challenge
  }

  /** Spends the response's challenge, which must be of `purpose` and issued for `userId` (null: for no account). */
  private async spendChallenge (challenge: string, purpose: PasskeyChallengePurpose, userId: string | null): Promise<void> {
    const spent = await spendPasskeyChallenge(this.deps.db, secretTokenHash(challenge), purpose)
    if (spent === undefined || spent.userId !== userId) throw createError('PASSKEY_CHALLENGE_INVALID')
  }

  /** The options for navigator.credentials.create(): a discoverable credential, user verification required, none of the user's own again. */
  async registrationOptions (caller: Caller): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const user = await findUserById(this.deps.db, caller.userId)
    if (user === undefined) throw createError('AUTH_SESSION_ENDED')
    const existing = await listPasskeys(this.deps.db, user.id)
    const { relyingParty: rp } = this.deps
    return await generateRegistrationOptions({
      rpName: rp.name,
      rpID: rp.id,
      userName: user.email,
      userDisplayName: user.name ?? user.email,
      userID: new Uint8Array(userHandle(user.id)),
      challenge: new Uint8Array(await this.issueChallenge('register', user.id)),
      timeout: this.deps.challengeTtlSeconds * 1000,
      attestationType: 'none',
      excludeCredentials: existing.map((passkey) => ({ id: passkey.credentialId.toString('base64url'), transports: passkey.transports })),
      authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
      supportedAlgorithmIDs: supportedAlgorithmIds,
    })
  }

  /** Verifies a registration response to the caller's options and keeps the credential; every other session of the account ends (a new way in). */
  async register (caller: Caller, input: { response: RegistrationResponseJSON, name?: string | undefined }): Promise<PasskeyView> {
    const { relyingParty: rp } = this.deps
    const client = readClientData(input.response.response.clientDataJSON, 'webauthn.create')
    await this.spendChallenge(client.challenge, 'register', caller.userId)
    assertCeremonyContext(client, readAuthenticatorData(input.response.response), rp)
    let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>
    try {
      verified = await verifyRegistrationResponse({
        response: input.response,
        expectedChallenge: client.challenge,
        expectedOrigin: rp.origins,
        expectedRPID: rp.id,
        requireUserVerification: true,
        supportedAlgorithmIDs: supportedAlgorithmIds,
      })
    } catch (err) {
      throw createError('PASSKEY_INVALID', undefined, { cause: err })
    }
    if (!verified.verified) throw createError('PASSKEY_INVALID')
    const { credential, credentialBackedUp, credentialDeviceType, aaguid } = verified.registrationInfo
    const { stored, ended } = await withTransaction(this.deps.db, async (db) => {
      const stored = await insertPasskey(db, {
        credentialId: Buffer.from(credential.id, 'base64url'),
        userId: caller.userId,
        publicKey: Buffer.from(credential.publicKey),
        signCount: credential.counter,
        transports: credential.transports ?? [],
        backupEligible: credentialDeviceType === 'multiDevice',
        backedUp: credentialBackedUp,
        aaguid,
        name: input.name ?? defaultPasskeyName,
      })
      if (stored === undefined) throw createError('PASSKEY_ALREADY_REGISTERED')
      return { stored, ended: await revokeAllSessionIds(db, caller.userId, { except: caller.sessionId, reason: 'second_factor_changed' }) }
    })
    this.deps.sessions.forget(ended)
    this.deps.log.info({ event: 'passkey_added', userId: caller.userId, passkeyId: stored.id, backupEligible: stored.backupEligible, sessionsEnded: ended.length }, 'passkey added')
    return view(stored)
  }

  /**
   * The options for navigator.credentials.get(). Without `userId`: no allowCredentials, so the
   * browser offers the passkeys it holds for this relying party (sign in with no email). With
   * `userId` (a second step): that account's passkeys.
   */
  async authenticationOptions (userId?: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const allowCredentials = userId === undefined
      ? undefined
      : (await listPasskeys(this.deps.db, userId)).map((passkey) => ({ id: passkey.credentialId.toString('base64url'), transports: passkey.transports }))
    return await generateAuthenticationOptions({
      rpID: this.deps.relyingParty.id,
      challenge: new Uint8Array(await this.issueChallenge('authenticate', userId ?? null)),
      timeout: this.deps.challengeTtlSeconds * 1000,
      userVerification: 'required',
      ...(allowCredentials === undefined ? {} : { allowCredentials }),
    })
  }

  /**
   * Verifies an assertion: its challenge (spent here, answered or refused), origin, relying party,
   * user verification, credential, signature and counter. Without `userId`, the challenge must be
   * one issued for no account and the passkey names the account; with it (a password login's
   * second step), both must be that account's. A counter that does not move forward refuses the
   * sign-in: two authenticators hold the key (a clone), a security event.
   */
  async verifyAssertion (response: AuthenticationResponseJSON, userId?: string): Promise<VerifiedPasskey> {
    const { relyingParty: rp } = this.deps
    const client = readClientData(response.response.clientDataJSON, 'webauthn.get')
    // The challenge spent, the credential and its account read: one statement.
    const { challenge, passkey, user } = await spendChallengeAndFindPasskey(this.deps.db, secretTokenHash(client.challenge), 'authenticate', Buffer.from(response.rawId, 'base64url'))
    if (challenge === undefined || challenge.userId !== (userId ?? null)) throw createError('PASSKEY_CHALLENGE_INVALID')
    assertCeremonyContext(client, readAuthenticatorData(response.response), rp)
    if (passkey === undefined || user === undefined || (userId !== undefined && passkey.userId !== userId)) throw createError('PASSKEY_CREDENTIAL_UNKNOWN')
    const handle = response.response.userHandle
    if (handle !== undefined && !userHandle(passkey.userId).equals(Buffer.from(handle, 'base64url'))) throw createError('PASSKEY_CREDENTIAL_UNKNOWN')
    let info: Awaited<ReturnType<typeof verifyAuthenticationResponse>>['authenticationInfo']
    try {
      const verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: client.challenge,
        expectedOrigin: rp.origins,
        expectedRPID: rp.id,
        // The counter is judged below, after the signature: a regression is then a clone's, not a forger's.
        credential: { id: passkey.credentialId.toString('base64url'), publicKey: new Uint8Array(passkey.publicKey), counter: 0, transports: passkey.transports },
        requireUserVerification: true,
      })
      if (!verified.verified) throw new Error('signature not verified')
      info = verified.authenticationInfo
    } catch (err) {
      throw createError('PASSKEY_INVALID', undefined, { cause: err })
    }
    if (!await recordPasskeyUse(this.deps.db, passkey.id, { signCount: info.newCounter, backedUp: info.credentialBackedUp })) {
      this.deps.log.warn({ event: 'passkey_counter_regressed', userId: passkey.userId, passkeyId: passkey.id, storedCount: passkey.signCount, presentedCount: info.newCounter }, 'passkey counter went back: a cloned authenticator? sign-in refused')
      throw createError('PASSKEY_COUNTER_REGRESSED')
    }
    return { user, passkeyId: passkey.id, amr: passkeyAmr(passkey) }
  }

  async list (caller: Caller): Promise<PasskeyView[]> {
    return (await listPasskeys(this.deps.db, caller.userId)).map(view)
  }

  async rename (caller: Caller, id: string, name: string): Promise<void> {
    if (!await renamePasskey(this.deps.db, caller.userId, id, name)) throw createError('PASSKEY_NOT_FOUND')
  }

  /** Deletes one of the caller's passkeys, unless it is the account's last way to sign in; every other session ends. */
  async remove (caller: Caller, id: string): Promise<void> {
    const ended = await withTransaction(this.deps.db, async (db) => {
      const outcome = await deletePasskeyUnlessLast(db, caller.userId, id)
      if (outcome === 'not_found') throw createError('PASSKEY_NOT_FOUND')
      if (outcome === 'last_sign_in_method') throw createError('PASSKEY_LAST_SIGN_IN_METHOD')
      return await revokeAllSessionIds(db, caller.userId, { except: caller.sessionId, reason: 'second_factor_changed' })
    })
    this.deps.sessions.forget(ended)
    this.deps.log.info({ event: 'passkey_removed', userId: caller.userId, passkeyId: id, sessionsEnded: ended.length }, 'passkey removed')
  }
}
