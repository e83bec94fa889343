/**
 * The code flow walked without a browser: plain HTTP with a cookie jar, following the provider's
 * redirects by hand and posting its forms, until the browser would arrive at the client's redirect
 * URI. For the refusal tests, which need codes and pages, not rendering.
 */
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
