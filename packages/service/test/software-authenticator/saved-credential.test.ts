/**
 * The software authenticator's credential carried to another thread: saved as plain data (through
 * JSON or a structured clone), restored, it signs assertions that the relying party's library
 * verifies with the public key it registered; its counter carries on where it was.
 */
import assert from 'node:assert/strict'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { verifyAuthenticationResponse, verifyRegistrationResponse, type WebAuthnCredential } from '@simplewebauthn/server'
import { SoftwareAuthenticator } from '../../src/software-authenticator/index.js'

const rp = { id: 'tollbooth.test', origin: 'https://app.tollbooth.test' }
const challenge = (): string => randomBytes(32).toString('base64url')

async function registered (authenticator: SoftwareAuthenticator): Promise<WebAuthnCredential> {
  const creation = { challenge: challenge(), rp: { id: rp.id }, user: { id: randomBytes(16).toString('base64url') } }
  const verified = await verifyRegistrationResponse({ response: authenticator.createCredential(creation), expectedChallenge: creation.challenge, expectedOrigin: rp.origin, expectedRPID: rp.id, requireUserVerification: true })
  assert.equal(verified.verified, true)
  const credential = verified.registrationInfo?.credential
  assert.ok(credential !== undefined)
  return credential
}

async function verifies (authenticator: SoftwareAuthenticator, credential: WebAuthnCredential): Promise<number> {
  const request = { challenge: challenge(), rpId: rp.id }
  const verified = await verifyAuthenticationResponse({
    response: authenticator.getAssertion(request), expectedChallenge: request.challenge, expectedOrigin: rp.origin, expectedRPID: rp.id, credential, requireUserVerification: true,
  })
  assert.equal(verified.verified, true)
  return verified.authenticationInfo.newCounter
}

describe('a saved software credential', () => {
  it('restored from JSON, signs assertions the registered public key verifies, its counter carried on', async () => {
    const original = new SoftwareAuthenticator({ origin: rp.origin })
    const credential = await registered(original)
    assert.equal(await verifies(original, credential), 1)
    const restored = SoftwareAuthenticator.restore(JSON.parse(JSON.stringify(original.save())))
    assert.equal(restored.id, original.id)
    assert.equal(restored.userHandle, original.userHandle)
    assert.equal(await verifies(restored, { ...credential, counter: 1 }), 2, 'the counter goes on from the saved one')
  })

  it('survives a structured clone (a worker thread\'s copy), counter-less authenticators included', async () => {
    const original = new SoftwareAuthenticator({ origin: rp.origin, signCount: 0, counterStep: 0 })
    const credential = await registered(original)
    const copies = [structuredClone(original.save()), structuredClone(original.save())].map((saved) => SoftwareAuthenticator.restore(saved))
    for (const copy of copies) assert.equal(await verifies(copy, credential), 0, 'a counter of 0 stays 0: copies never disagree')
  })

  it('restores only a P-256 key', () => {
    const saved = new SoftwareAuthenticator({ origin: rp.origin }).save()
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ format: 'jwk' })
    assert.throws(() => SoftwareAuthenticator.restore({ ...saved, privateKeyJwk: p384 }), /P-256/)
  })
})
