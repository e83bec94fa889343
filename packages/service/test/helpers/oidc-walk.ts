/**
 * The code flow walked without a browser: plain HTTP with a cookie jar, following the provider's
 * redirects by hand and posting its forms, until the browser would arrive at the client's redirect
 * URI. For the refusal tests, which need codes and pages, not rendering.
 */
import * as client from 'openid-client'
import { fetch as undiciFetch } from 'undici'

export interface WalkResponse {
  status: number
  location: string | undefined
  headers: Headers
  text: string
}

export class CookieJar {
  private readonly cookies = new Map<string, string>()

  header (): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }

  take (headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair = ''] = line.split(';')
      const at = pair.indexOf('=')
      if (at <= 0) continue
      const name = pair.slice(0, at).trim()
      const value = pair.slice(at + 1).trim()
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }
}

/** One request, no redirect followed, cookies sent and kept. */
export async function step (jar: CookieJar, url: string, form?: Record<string, string>): Promise<WalkResponse> {
  const response = await undiciFetch(url, {
    method: form === undefined ? 'GET' : 'POST',
    redirect: 'manual',
    headers: { cookie: jar.header(), ...(form === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }) },
    ...(form === undefined ? {} : { body: new URLSearchParams(form).toString() }),
  })
  jar.take(response.headers as Headers)
  const location = response.headers.get('location') ?? undefined
  return { status: response.status, location: location === undefined ? undefined : new URL(location, url).href, headers: response.headers as Headers, text: await response.text() }
}

/** Follows redirects from `url` until one leaves `origin` (the client's redirect URI) or a page answers. */
export async function follow (jar: CookieJar, url: string, origin: string): Promise<{ arrivedAt?: URL, page?: WalkResponse }> {
  let next = url
  for (let hops = 0; hops < 10; hops++) {
    const response = await step(jar, next)
    if (response.location === undefined) return { page: response }
    if (!response.location.startsWith(origin)) return { arrivedAt: new URL(response.location) }
    next = response.location
  }
  throw new Error(`more than 10 redirects from ${url}`)
}

/** The action of the page's first form (the sign-in, second-factor or consent form). */
export function formAction (html: string, base: string): string {
  const match = /<form method="post" action="([^"]+)"/.exec(html)
  if (match?.[1] === undefined) throw new Error(`no form on the page: ${html.slice(0, 300)}`)
  return new URL(match[1].replaceAll('&amp;', '&'), base).href
}

/** An authorization request with PKCE (S256), a state and a nonce, as a relying party builds it. */
export async function authorizationRequest (config: client.Configuration, redirectUri: string, extra: Record<string, string> = {}): Promise<{ url: URL, verifier: string, state: string, nonce: string }> {
  const verifier = client.randomPKCECodeVerifier()
  const state = client.randomState()
  const nonce = client.randomNonce()
  const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid email', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce, ...extra })
  return { url, verifier, state: url.searchParams.get('state') ?? state, nonce }
}

/**
 * A new browser (a new jar) signs in with a password from the authorization request to the
 * client's redirect URI, where the callback with its code arrives. No consent page: for a
 * first-party client.
 */
export async function walkSignIn (origin: string, config: client.Configuration, redirectUri: string, credentials: { email: string, password: string }, extra: Record<string, string> = {}): Promise<{ callback: URL, verifier: string, state: string, nonce: string }> {
  const jar = new CookieJar()
  const started = await authorizationRequest(config, redirectUri, extra)
  let walked = await follow(jar, started.url.href, origin)
  if (walked.page !== undefined) {
    const posted = await step(jar, formAction(walked.page.text, origin), credentials)
    if (posted.status !== 303) throw new Error(`the sign-in answered ${posted.status}: ${posted.text.slice(0, 300)}`)
    walked = await follow(jar, posted.location ?? '', origin)
  }
  const callback = walked.arrivedAt
  if (callback === undefined || !callback.href.startsWith(redirectUri)) throw new Error(`did not arrive at the client: ${String(callback ?? walked.page?.text.slice(0, 300))}`)
  return { callback, verifier: started.verifier, state: started.state, nonce: started.nonce }
}
