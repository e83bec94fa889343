/**
 * Passkeys end to end on a real service and database, with the software authenticator: register,
 * sign in with no email typed, each coded refusal, list, rename, delete, and the last way in.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerUser, request, startTestService, type TestService } from '../../helpers/service.js'
import { slowBcryptHash } from '../../helpers/policies.js'
import { addPasskey, errorOf, newAuthenticator, signInWithPasskey, testPasskeyConfig, testRelyingParty } from '../../helpers/factors/passkeys.js'

interface Signed { accessToken: string, refreshToken: string, user: { id: string } }

function claimsOf (accessToken: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(accessToken.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>
}

describe('passkeys', () => {
  let service: TestService
  before(async () => { service = await startTestService({ config: testPasskeyConfig }) })
  after(async () => { await service.close() })

  const withPasskey = async (authenticator = newAuthenticator()): Promise<{ account: Signed, passkeyId: string }> => {
    const account = (await registerUser(service)).body as Signed
    const added = await addPasskey(service, account.accessToken, authenticator)
    assert.equal(added.status, 201, JSON.stringify(added.body))
    return { account, passkeyId: added.body.id as string }
  }

  it('registers a discoverable passkey and signs in with it, no email typed: a session as a password login opens', async () => {
    const authenticator = newAuthenticator()
    const account = (await registerUser(service)).body as Signed
    const creation = await request(service, 'POST', '/api/v1/me/passkeys/options', { token: account.accessToken })
    assert.equal(creation.status, 200)
    assert.equal(creation.body.rp.id, testRelyingParty.id)
    assert.deepEqual(creation.body.authenticatorSelection, { residentKey: 'required', requireResidentKey: true, userVerification: 'required' })
    assert.equal(Buffer.from(creation.body.user.id as string, 'base64url').length, 16, 'the user handle: 16 bytes, no email in it')
    const added = await request(service, 'POST', '/api/v1/me/passkeys', { token: account.accessToken, body: { response: authenticator.createCredential(creation.body), name: 'Laptop' } })
    assert.equal(added.status, 201, JSON.stringify(added.body))
    assert.equal(added.body.credentialId, authenticator.id)
    assert.deepEqual([added.body.name, added.body.backupEligible, added.body.backedUp, added.body.lastUsedAt], ['Laptop', false, false, null])

    const options = await request(service, 'POST', '/api/v1/auth/passkey/options')
    assert.equal(options.status, 200)
    assert.equal(options.body.allowCredentials, undefined, 'no credentials named: the browser offers the passkeys it holds')
    assert.equal(options.body.userVerification, 'required')
    assert.equal(options.headers.get('cache-control'), 'no-store')
    const signedIn = await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: authenticator.getAssertion(options.body) }, headers: { 'user-agent': 'Passkey/1.0' } })
    assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body))
    assert.equal(signedIn.body.user.id, account.user.id)
    assert.match(signedIn.headers.get('tollbooth-device') ?? '', /^[A-Za-z0-9_-]{43}$/, 'a device token, as a password login hands one')
    const me = await request(service, 'GET', '/api/v1/me', { token: signedIn.body.accessToken as string })
    assert.deepEqual([me.status, me.body.id], [200, account.user.id])
    const refreshed = await request(service, 'POST', '/api/v1/auth/refresh', { body: { refreshToken: signedIn.body.refreshToken } })
    assert.equal(refreshed.status, 200, 'its refresh token works as any session\'s')
    const sessions = await request(service, 'GET', '/api/v1/me/sessions', { token: signedIn.body.accessToken as string })
    assert.ok((sessions.body.items as Array<{ userAgent: string, current: boolean }>).some((item) => item.current && item.userAgent === 'Passkey/1.0'))
    const listed = await request(service, 'GET', '/api/v1/me/passkeys', { token: signedIn.body.accessToken as string })
    assert.equal(listed.body.items.length, 1)
    assert.notEqual(listed.body.items[0].lastUsedAt, null, 'its last use recorded')
    assert.deepEqual(claimsOf(signedIn.body.accessToken as string).amr, ['hwk', 'user', 'mfa'], 'a device-bound key, the user verified: two factors (RFC 8176)')
    assert.deepEqual(claimsOf(refreshed.body.accessToken as string).amr, ['hwk', 'user', 'mfa'], 'kept by the session across refreshes')
  })

  it('spends a challenge once: a replayed assertion is refused, and so is an expired challenge', async () => {
    const authenticator = newAuthenticator()
    await withPasskey(authenticator)
    const options = await request(service, 'POST', '/api/v1/auth/passkey/options')
    const assertion = authenticator.getAssertion(options.body)
    assert.equal((await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: assertion } })).status, 200)
    assert.deepEqual(errorOf(await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: assertion } })), [400, 'PASSKEY_CHALLENGE_INVALID'])

    const late = await request(service, 'POST', '/api/v1/auth/passkey/options')
    await service.db.pool.query("UPDATE passkey_challenges SET expires_at = now() - interval '1 second'")
    assert.deepEqual(errorOf(await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: authenticator.getAssertion(late.body) } })), [400, 'PASSKEY_CHALLENGE_INVALID'])
    const unknown = authenticator.getAssertion(options.body, { challenge: Buffer.alloc(32, 7).toString('base64url') })
    assert.deepEqual(errorOf(await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: unknown } })), [400, 'PASSKEY_CHALLENGE_INVALID'])
    // Challenges are kept unlogged (no WAL flush per ceremony); a crash empties them, as their expiry would.
    const { rows } = await service.db.pool.query<{ relpersistence: string }>("SELECT relpersistence FROM pg_class WHERE relname = 'passkey_challenges'")
    assert.equal(rows[0]?.relpersistence, 'u')
  })

  it('refuses a response from another origin, for another relying party, or without user verification, each with its code', async () => {
    const authenticator = newAuthenticator()
    await withPasskey(authenticator)
    assert.deepEqual(errorOf(await signInWithPasskey(service, authenticator, { origin: 'https://evil.example' })), [400, 'PASSKEY_ORIGIN_MISMATCH'])
    assert.deepEqual(errorOf(await signInWithPasskey(service, authenticator, { rpId: 'evil.example' })), [400, 'PASSKEY_RP_ID_MISMATCH'])
    assert.deepEqual(errorOf(await signInWithPasskey(service, authenticator, { userVerified: false })), [400, 'PASSKEY_USER_NOT_VERIFIED'])
    // The same checks at registration.
    const account = (await registerUser(service)).body as Signed
    assert.deepEqual(errorOf(await addPasskey(service, account.accessToken, newAuthenticator(), { origin: 'https://evil.example' })), [400, 'PASSKEY_ORIGIN_MISMATCH'])
    assert.deepEqual(errorOf(await addPasskey(service, account.accessToken, newAuthenticator(), { rpId: 'evil.example' })), [400, 'PASSKEY_RP_ID_MISMATCH'])
    assert.deepEqual(errorOf(await addPasskey(service, account.accessToken, newAuthenticator(), { userVerified: false })), [400, 'PASSKEY_USER_NOT_VERIFIED'])
    assert.equal((await request(service, 'GET', '/api/v1/me/passkeys', { token: account.accessToken })).body.items.length, 0, 'none of them kept')
    assert.equal((await signInWithPasskey(service, authenticator)).status, 200, 'the passkey still works')
  })

  it('refuses a counter that goes back (a cloned authenticator), and keeps counting after', async () => {
    const authenticator = newAuthenticator({ signCount: 10 })
    await withPasskey(authenticator)
    assert.equal((await signInWithPasskey(service, authenticator)).status, 200)
    assert.deepEqual(errorOf(await signInWithPasskey(service, authenticator, { signCount: 5 })), [401, 'PASSKEY_COUNTER_REGRESSED'])
    assert.deepEqual(errorOf(await signInWithPasskey(service, authenticator, { signCount: 11 })), [401, 'PASSKEY_COUNTER_REGRESSED'], 'the same counter again')
    assert.equal((await signInWithPasskey(service, authenticator, { signCount: 12 })).status, 200)
    // An authenticator that keeps no counter (synced passkeys often do not) signs in every time.
    const counterless = newAuthenticator({ signCount: 0, counterStep: 0, backupEligible: true, backedUp: true })
    await withPasskey(counterless)
    assert.equal((await signInWithPasskey(service, counterless)).status, 200)
    const again = await signInWithPasskey(service, counterless)
    assert.equal(again.status, 200)
    assert.deepEqual(claimsOf(again.body.accessToken as string).amr, ['swk', 'user', 'mfa'], 'a syncable passkey is a software-secured key')
  })

  it('refuses an unknown credential, a user handle of another account, and a forged signature', async () => {
    const stranger = newAuthenticator()
    stranger.userHandle = Buffer.alloc(16, 1).toString('base64url')
    assert.deepEqual(errorOf(await signInWithPasskey(service, stranger)), [401, 'PASSKEY_CREDENTIAL_UNKNOWN'])
    const authenticator = newAuthenticator()
    await withPasskey(authenticator)
    const other = await withPasskey()
    const handle = authenticator.userHandle
    authenticator.userHandle = Buffer.from(other.account.user.id.replaceAll('-', ''), 'hex').toString('base64url')
    assert.deepEqual(errorOf(await signInWithPasskey(service, authenticator)), [401, 'PASSKEY_CREDENTIAL_UNKNOWN'])
    authenticator.userHandle = handle
    const options = await request(service, 'POST', '/api/v1/auth/passkey/options')
    const forged = authenticator.getAssertion(options.body)
    const imposter = newAuthenticator()
    imposter.userHandle = handle
    forged.response.signature = imposter.getAssertion(options.body).response.signature
    assert.deepEqual(errorOf(await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: forged } })), [401, 'PASSKEY_INVALID'])
    // A refused assertion spent its challenge as an answered one does: the genuine one cannot follow.
    assert.deepEqual(errorOf(await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: authenticator.getAssertion(options.body) } })), [400, 'PASSKEY_CHALLENGE_INVALID'])
    const unknownFirst = await request(service, 'POST', '/api/v1/auth/passkey/options')
    assert.deepEqual(errorOf(await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: stranger.getAssertion(unknownFirst.body) } })), [401, 'PASSKEY_CREDENTIAL_UNKNOWN'])
    assert.deepEqual(errorOf(await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: authenticator.getAssertion(unknownFirst.body) } })), [400, 'PASSKEY_CHALLENGE_INVALID'])
  })

  it('refuses a registration to another user\'s options, and a credential registered already', async () => {
    const authenticator = newAuthenticator()
    const { account } = await withPasskey(authenticator)
    assert.deepEqual(errorOf(await addPasskey(service, account.accessToken, authenticator)), [409, 'PASSKEY_ALREADY_REGISTERED'])
    const other = (await registerUser(service)).body as Signed
    const options = await request(service, 'POST', '/api/v1/me/passkeys/options', { token: other.accessToken })
    const response = newAuthenticator().createCredential(options.body)
    assert.deepEqual(errorOf(await request(service, 'POST', '/api/v1/me/passkeys', { token: account.accessToken, body: { response } })), [400, 'PASSKEY_CHALLENGE_INVALID'])
  })

  it('reads a ceremony\'s body up to the largest the schema admits: past TOLLBOOTH_BODY_LIMIT_BYTES, refused for what it says, not 413', async () => {
    const account = (await registerUser(service)).body as Signed
    const options = await request(service, 'POST', '/api/v1/me/passkeys/options', { token: account.accessToken })
    const response = newAuthenticator().createCredential(options.body)
    // 24 KiB of attestation (certificates can fill one): over the 16 KiB default, within the schema's 32 KiB.
    response.response.attestationObject = 'A'.repeat(24 * 1024)
    const refused = await request(service, 'POST', '/api/v1/me/passkeys', { token: account.accessToken, body: { response } })
    assert.deepEqual(errorOf(refused), [401, 'PASSKEY_INVALID'], 'read and verified: the attestation is no CBOR')
    const signIn = await request(service, 'POST', '/api/v1/auth/passkey/verify', { body: { response: { ...response, response: { clientDataJSON: 'A'.repeat(8000), authenticatorData: 'A'.repeat(8000), signature: 'A'.repeat(1000) } } } })
    assert.notEqual(signIn.status, 413, JSON.stringify(signIn.body))
    assert.match(String(signIn.body.error.code), /^PASSKEY_/, JSON.stringify(signIn.body))
  })

  it('lists, renames and deletes one\'s own passkeys; another user\'s are not found', async () => {
    const authenticator = newAuthenticator()
    const { account, passkeyId } = await withPasskey(authenticator)
    const other = (await registerUser(service)).body as Signed
    assert.deepEqual(errorOf(await request(service, 'PATCH', `/api/v1/me/passkeys/${passkeyId}`, { token: other.accessToken, body: { name: 'Mine now' } })), [404, 'PASSKEY_NOT_FOUND'])
    assert.deepEqual(errorOf(await request(service, 'DELETE', `/api/v1/me/passkeys/${passkeyId}`, { token: other.accessToken })), [404, 'PASSKEY_NOT_FOUND'])
    assert.equal((await request(service, 'PATCH', `/api/v1/me/passkeys/${passkeyId}`, { token: account.accessToken, body: { name: 'Phone' } })).status, 204)
    const listed = await request(service, 'GET', '/api/v1/me/passkeys', { token: account.accessToken })
    assert.deepEqual(listed.body.items.map((item: { id: string, name: string }) => [item.id, item.name]), [[passkeyId, 'Phone']])
    assert.equal((await request(service, 'DELETE', `/api/v1/me/passkeys/${passkeyId}`, { token: account.accessToken })).status, 204)
    assert.equal((await request(service, 'GET', '/api/v1/me/passkeys', { token: account.accessToken })).body.items.length, 0)
    assert.deepEqual(errorOf(await signInWithPasskey(service, authenticator)), [401, 'PASSKEY_CREDENTIAL_UNKNOWN'])
  })

  it('ends the account\'s other sessions when a passkey is added or deleted', async () => {
    const { email, password, body } = await registerUser(service)
    const other = (await request(service, 'POST', '/api/v1/auth/login', { body: { email, password } })).body as Signed
    const added = await addPasskey(service, (body as Signed).accessToken, newAuthenticator())
    assert.equal(added.status, 201)
    assert.deepEqual(errorOf(await request(service, 'GET', '/api/v1/me', { token: other.accessToken })), [401, 'AUTH_SESSION_ENDED'])
    assert.equal((await request(service, 'GET', '/api/v1/me', { token: (body as Signed).accessToken })).status, 200, 'the current one keeps working')
  })

  it('refuses to delete an account\'s last way to sign in: no password and one passkey', async () => {
    const first = newAuthenticator()
    const second = newAuthenticator()
    const { account, passkeyId } = await withPasskey(first)
    const secondId = (await addPasskey(service, account.accessToken, second)).body.id as string
    await service.db.pool.query('UPDATE users SET password_hash = NULL WHERE id = $1', [account.user.id])
    const signedIn = (await signInWithPasskey(service, first)).body as Signed
    assert.equal((await request(service, 'DELETE', `/api/v1/me/passkeys/${secondId}`, { token: signedIn.accessToken })).status, 204, 'another passkey remains')
    assert.deepEqual(errorOf(await request(service, 'DELETE', `/api/v1/me/passkeys/${passkeyId}`, { token: signedIn.accessToken })), [409, 'PASSKEY_LAST_SIGN_IN_METHOD'])
    assert.equal((await signInWithPasskey(service, first)).status, 200, 'still there, still works')
    const me = await request(service, 'GET', '/api/v1/me', { token: signedIn.accessToken })
    const login = await request(service, 'POST', '/api/v1/auth/login', { body: { email: me.body.email, password: 'correct horse battery staple' } })
    assert.deepEqual(errorOf(login), [401, 'AUTH_INVALID_CREDENTIALS'], 'an account without a password refuses every password, as a wrong one')
  })
})

describe('a passkey sign-in never waits for the hash threads', () => {
  let service: TestService
  before(async () => { service = await startTestService({ threads: 1, config: testPasskeyConfig }) })
  after(async () => { await service.close() })

  it('signs in while the only hash thread is busy and verifies are queued, and costs no hash admission', async () => {
    const authenticator = newAuthenticator()
    const account = (await registerUser(service)).body as Signed
    assert.equal((await addPasskey(service, account.accessToken, authenticator)).status, 201)
    const stored = slowBcryptHash(13)
    const blockers = Array.from({ length: 2 }, async (_, i) => await service.engine.verify('blocker', stored, { client: `blocker-${i}` }).catch(() => undefined))
    try {
      assert.equal(service.engine.stats().running, 1, 'the thread is taken')
      const before = service.engine.stats()
      for (let i = 0; i < 5; i++) assert.equal((await signInWithPasskey(service, authenticator)).status, 200)
      const afterSignIns = service.engine.stats()
      assert.equal(afterSignIns.admissionChecks, before.admissionChecks, 'no hash admission was asked')
      assert.ok(afterSignIns.queued + afterSignIns.running >= 1, 'the sign-ins finished with the blockers still in the pool')
    } finally {
      await Promise.all(blockers)
    }
  })
})
