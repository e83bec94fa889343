/**
 * The pages the OpenID Connect provider renders itself, or with tollbooth's markup through its
 * hooks (errors, the logout confirmation), answer with a Content-Security-Policy: no script but
 * the inline ones the provider hashes into it, the pages' one stylesheet by hash, no frame, no base.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { startOidcService, type OidcTestService } from '../helpers/oidc.js'

describe('the provider\'s own pages', () => {
  let service: OidcTestService

  before(async () => { service = await startOidcService() })
  after(async () => { await service?.close() })

  async function page (path: string): Promise<{ status: number, policy: string, html: string }> {
    const response = await fetch(`${service.url}${path}`, { redirect: 'manual' })
    return { status: response.status, policy: response.headers.get('content-security-policy') ?? '', html: await response.text() }
  }

  /** The directives of a policy, by name. */
  function directives (policy: string): Map<string, string[]> {
    return new Map(policy.split(';').map((directive) => directive.trim().split(/\s+/)).filter((parts) => parts[0] !== '').map(([name = '', ...values]) => [name, values]))
  }

  it('an error page (an unknown client, in tollbooth\'s markup) and the logout (the provider\'s auto-submitting form) carry the policy, and name their inline style and script by hash', async () => {
    const seen = { styles: 0, scripts: 0 }
    for (const path of ['/oidc/auth?client_id=nobody&response_type=code&scope=openid', '/oidc/session/end']) {
      const { status, policy, html } = await page(path)
      assert.ok(status === 200 || status === 400, `${path}: ${status}`)
      const found = directives(policy)
      assert.deepEqual(found.get('default-src'), ["'none'"], `${path}: ${policy}`)
      assert.deepEqual(found.get('frame-ancestors'), ["'none'"])
      assert.deepEqual(found.get('base-uri'), ["'none'"])
      for (const [, style = ''] of html.matchAll(/<style>([\s\S]*?)<\/style>/g)) {
        seen.styles++
        assert.deepEqual(found.get('style-src'), [`'sha256-${createHash('sha256').update(style).digest('base64')}'`], `${path}: the style's hash`)
      }
      for (const [, script = ''] of html.matchAll(/<script>([\s\S]*?)<\/script>/g)) {
        seen.scripts++
        assert.ok(found.get('script-src')?.includes(`'sha256-${createHash('sha256').update(script).digest('base64')}'`), `${path}: an inline script the policy does not name: ${policy}`)
      }
    }
    assert.ok(seen.styles >= 1 && seen.scripts >= 1, `one page in tollbooth's markup, one with the provider's script: ${JSON.stringify(seen)}`)
  })
})
