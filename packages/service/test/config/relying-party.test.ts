/** The passkeys' relying party from the settings, or derived from the public URL. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig, passkeyRelyingParty } from '../../src/config/index.js'

const relyingParty = (env: NodeJS.ProcessEnv): { id: string, origins: string[] } => {
  const { id, origins } = passkeyRelyingParty(loadConfig({ env }))
  return { id, origins }
}

describe('the passkeys\' relying party', () => {
  it('is the public URL\'s host and origin when unset', () => {
    assert.deepEqual(relyingParty({ TOLLBOOTH_PUBLIC_URL: 'https://auth.example.com' }), { id: 'auth.example.com', origins: ['https://auth.example.com'] })
  })

  it('names a loopback address localhost (browsers take no address as relying party id): the development default works at http://localhost:<port>', () => {
    assert.deepEqual(relyingParty({}), { id: 'localhost', origins: ['http://localhost:3000'] })
    assert.deepEqual(relyingParty({ TOLLBOOTH_PUBLIC_URL: 'http://127.0.0.2:4000' }), { id: 'localhost', origins: ['http://localhost:4000'] })
    assert.deepEqual(relyingParty({ TOLLBOOTH_PUBLIC_URL: 'http://[::1]:4000' }), { id: 'localhost', origins: ['http://localhost:4000'] })
    assert.deepEqual(relyingParty({ TOLLBOOTH_PUBLIC_URL: 'http://192.168.1.5:3000' }), { id: '192.168.1.5', origins: ['http://192.168.1.5:3000'] }, 'another address is taken as it is')
  })

  it('is the settings when set', () => {
    assert.deepEqual(relyingParty({ TOLLBOOTH_PUBLIC_URL: 'http://127.0.0.1:3000', TOLLBOOTH_PASSKEY_RP_ID: 'example.com', TOLLBOOTH_PASSKEY_ORIGINS: 'https://app.example.com,https://login.example.com' }),
      { id: 'example.com', origins: ['https://app.example.com', 'https://login.example.com'] })
  })
})
