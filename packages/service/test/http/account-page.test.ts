/**
 * The account page's answers without a browser: served only with TOLLBOOTH_ACCOUNT_PAGE, HTML
 * under a strict policy and never stored, its script from its own origin, in the OpenAPI document.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { request, startTestService, type TestService } from '../helpers/service.js'

describe('the account page (GET /account)', () => {
  let on: TestService
  let off: TestService
  before(async () => {
    on = await startTestService({ threads: 1, config: { accountPage: true } })
    off = await startTestService({ threads: 1, config: { accountPage: false } })
  })
  after(async () => {
    await on?.close()
    await off?.close()
  })

  it('is HTML under a policy that allows no inline script and no eval, never stored', async () => {
    const page = await fetch(`${on.url}/account`)
    assert.equal(page.status, 200)
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8')
    assert.equal(page.headers.get('cache-control'), 'no-store')
    const policy = page.headers.get('content-security-policy') ?? ''
    const directives = new Map(policy.split(';').map((directive) => {
      const [name = '', ...values] = directive.trim().split(/\s+/)
      return [name, values]
    }))
    assert.deepEqual(directives.get('default-src'), ["'none'"])
    assert.deepEqual(directives.get('script-src'), ["'self'"], 'scripts from the origin only: no inline script, no eval')
    assert.deepEqual(directives.get('connect-src'), ["'self'"])
    assert.deepEqual(directives.get('frame-ancestors'), ["'none'"])
    assert.deepEqual(directives.get('require-trusted-types-for'), ["'script'"])
    assert.match(directives.get('style-src')?.[0] ?? '', /^'sha256-[A-Za-z0-9+/]{43}='$/, 'the one stylesheet, by its hash')
    assert.equal(page.headers.get('x-frame-options'), 'DENY', 'the other security headers stay')
    const markup = await page.text()
    assert.match(markup, /^<!doctype html>\n<html lang="en">/)
    assert.doesNotMatch(markup, /<script(?![^>]*\bsrc=)[^>]*>/, 'every script element has a src')
    assert.match(markup, /<script type="module" src="\/account\/account\.js"><\/script>/)
    for (const id of ['sign-in-email', 'sign-in-password', 'register-email', 'register-password', 'second-step-code', 'passkey-name', 'totp-code']) {
      assert.match(markup, new RegExp(`<label for="${id}">`), `${id} has its label`)
    }
  })

  it('serves its script as JavaScript from the same origin, never stored', async () => {
    const script = await fetch(`${on.url}/account/account.js`)
    assert.equal(script.status, 200)
    assert.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8')
    assert.equal(script.headers.get('cache-control'), 'no-store')
    const source = await script.text()
    assert.match(source, /navigator\.credentials\.get/)
    const code = source.split('\n').filter((line) => !line.trimStart().startsWith('//')).join('\n')
    assert.ok(!/\b(localStorage|sessionStorage)\b/.test(code), 'tokens in memory only, never in the browser\'s storage')
    assert.ok(!/\.(innerHTML|outerHTML)\b|insertAdjacentHTML|\beval\(/.test(code), 'text, never markup')
  })

  it('is listed in the OpenAPI document as HTML; other methods are 405', async () => {
    const openapi = await request(on, 'GET', '/openapi.json')
    assert.deepEqual(Object.keys(openapi.body.paths['/account'].get.responses['200'].content), ['text/html'])
    assert.deepEqual(Object.keys(openapi.body.paths['/account/account.js'].get.responses['200'].content), ['text/javascript'])
    const post = await request(on, 'POST', '/account', { body: {} })
    assert.equal(post.status, 405)
  })

  it('is 404 with TOLLBOOTH_ACCOUNT_PAGE=false, and absent from the OpenAPI document', async () => {
    assert.equal((await fetch(`${off.url}/account`)).status, 404)
    assert.equal((await fetch(`${off.url}/account/account.js`)).status, 404)
    const openapi = await request(off, 'GET', '/openapi.json')
    assert.equal(openapi.body.paths['/account'], undefined)
  })

  it('is on by default with the embedded database, off with DATABASE_URL', () => {
    assert.equal(loadConfig({ env: {} }).accountPage, true)
    assert.equal(loadConfig({ env: { DATABASE_URL: 'postgres://127.0.0.1/db', TOLLBOOTH_KEY_ENCRYPTION_KEY: 'ab'.repeat(32), TOLLBOOTH_PUBLIC_URL: 'https://auth.example.com' } }).accountPage, false)
    assert.equal(loadConfig({ env: { DATABASE_URL: 'postgres://127.0.0.1/db', TOLLBOOTH_KEY_ENCRYPTION_KEY: 'ab'.repeat(32), TOLLBOOTH_PUBLIC_URL: 'https://auth.example.com', TOLLBOOTH_ACCOUNT_PAGE: 'true' } }).accountPage, true)
  })
})
