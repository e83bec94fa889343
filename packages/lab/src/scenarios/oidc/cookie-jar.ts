/**
 * One browser's cookies, as the lab's walk of the code flow keeps them: by name, from each answer's
 * Set-Cookie, sent back whole on every request. Paths and domains are not matched: a walk talks
 * to one host, and the provider's cookies of one flow never share a name.
 */
export class CookieJar {
  private readonly cookies = new Map<string, string>()

  /** Keeps the cookies an answer set; one set empty or expired is forgotten. */
  take (setCookies: readonly string[] | undefined): void {
    for (const line of setCookies ?? []) {
      const end = line.indexOf(';')
      const pair = end === -1 ? line : line.slice(0, end)
      const at = pair.indexOf('=')
      if (at <= 0) continue
      const name = pair.slice(0, at).trim()
      const value = pair.slice(at + 1).trim()
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  /** The Cookie header to send; empty when there is none. */
  header (): string {
    let header = ''
    for (const [name, value] of this.cookies) header += `${header === '' ? '' : '; '}${name}=${value}`
    return header
  }
}
