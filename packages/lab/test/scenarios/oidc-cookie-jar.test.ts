/** The cookie jar of oidc-storm's walk: keeps what an answer sets by name, forgets what it clears, sends them back as one header. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CookieJar } from '../../src/scenarios/oidc/cookie-jar.js'

describe('the walk\'s cookie jar', () => {
  it('keeps cookies by name, the latest value winning, and forgets one cleared or expired', () => {
    const jar = new CookieJar()
    assert.equal(jar.header(), '')
    jar.take(['_interaction=one; path=/oidc/interaction/one; httponly', '_interaction.sig=s1; path=/oidc/interaction/one', 'other=x'])
    assert.equal(jar.header(), '_interaction=one; _interaction.sig=s1; other=x')
    jar.take(['_interaction=two; path=/oidc/interaction/two', 'other=; path=/', '_interaction.sig=gone; expires=Thu, 01 Jan 1970 00:00:00 GMT'])
    assert.equal(jar.header(), '_interaction=two')
    jar.take(undefined)
    jar.take(['no-equals-sign', '=no-name'])
    assert.equal(jar.header(), '_interaction=two')
  })
})
