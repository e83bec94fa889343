/**
 * The authorization code flow with PKCE walked as a browser walks it, over plain HTTP, without one:
 * GET the authorization endpoint, its sign-in page, POST the email and password form, the
 * provider's redirects back (a consent page submitted, for a client that asks), then the code
 * exchanged at the token endpoint. Redirects are followed by hand, to the same service, by path:
 * the issuer's host may not be the address the lab reaches the service at.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { LabResponse } from '../../http/index.js'
import type { Account, LabOidcClient, VirtualUser } from '../scenario.js'
import { CookieJar } from './cookie-jar.js'

export const oidcEndpoints = {
  authorize: 'GET /oidc/auth',
  page: 'GET /oidc/interaction/:uid',
  signIn: 'POST /oidc/interaction/:uid/login',
  consent: 'POST /oidc/interaction/:uid/consent',
  resume: 'GET /oidc/auth/:uid',
  token: 'POST /oidc/token',
} as const

/** A flow at its sign-in form: what a browser holds there (its cookies, the form's action, the PKCE verifier and state). */
export interface SignInForm {
  jar: CookieJar
  action: string
  verifier: string
  state: string
}

/** More hops than this between the sign-in and the client's redirect URI: the walk is lost. */
const maxHops = 6

function base64url (bytes: Buffer): string {
  return bytes.toString('base64url')
}

/** The path and query of a Location, absolute or not. */
function pathOf (location: string): string {
  const url = new URL(location, 'http://service.invalid')
  return `${url.pathname}${url.search}`
}

/** The action of the page's first form that holds `field` (any form when unset), its entities undone. */
function formAction (html: string | undefined, field?: string): string | undefined {
  for (const form of html?.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g) ?? []) {
    const action = /\baction="([^"]+)"/.exec(form[1] ?? '')?.[1]
    if (action !== undefined && (field === undefined || (form[2] ?? '').includes(`name="${field}"`))) return action.replaceAll('&amp;', '&')
  }
  return undefined
}

/** A request of the walk, its cookies sent and the ones it set kept. */
async function step (vu: VirtualUser, jar: CookieJar, endpoint: string, request: { method: 'GET' | 'POST', path: string, form?: Record<string, string>, readText?: boolean }): Promise<LabResponse> {
  const cookie = jar.header()
  const response = await vu.request(endpoint, { ...request, redirectIsOk: true, ...(cookie === '' ? {} : { headers: { cookie } }) })
  jar.take(response.setCookies)
  return response
}

/** A fresh browser at the authorization endpoint, then at the sign-in page: its form; undefined when a step failed. */
export async function openSignIn (vu: VirtualUser, client: LabOidcClient): Promise<SignInForm | undefined> {
  const jar = new CookieJar()
  const verifier = base64url(randomBytes(32))
  const state = base64url(randomBytes(16))
  const query = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: client.redirectUri,
    response_type: 'code',
    scope: 'openid email',
    code_challenge: base64url(createHash('sha256').update(verifier).digest()),
    code_challenge_method: 'S256',
    state,
  })
  const authorized = await step(vu, jar, oidcEndpoints.authorize, { method: 'GET', path: `/oidc/auth?${query.toString()}` })
  if (!authorized.ok || authorized.location === undefined) return undefined
  const page = await step(vu, jar, oidcEndpoints.page, { method: 'GET', path: pathOf(authorized.location), readText: true })
  // The password form: the page may offer a passkey's form too.
  const action = page.status === 200 ? formAction(page.text, 'password') : undefined
  return action === undefined ? undefined : { jar, action, verifier, state }
}

/** The sign-in form posted: the provider's redirect on, or the answer that is not one (a 503 busy page, a refusal). */
export async function postSignIn (vu: VirtualUser, form: SignInForm, account: Account): Promise<LabResponse> {
  return await step(vu, form.jar, oidcEndpoints.signIn, { method: 'POST', path: form.action, form: { email: account.email, password: account.password } })
}

/** From the sign-in's redirect to the client's redirect URI (consent given when asked): the code; undefined when the walk failed. */
async function codeFrom (vu: VirtualUser, form: SignInForm, client: LabOidcClient, location: string): Promise<string | undefined> {
  let next = location
  for (let hop = 0; hop < maxHops; hop++) {
    if (next.startsWith(client.redirectUri)) {
      const query = new URL(next).searchParams
      return query.get('state') === form.state ? (query.get('code') ?? undefined) : undefined
    }
    const path = pathOf(next)
    let response: LabResponse
    if (path.startsWith('/oidc/interaction/')) {
      // A consent page: its first form allows.
      const page = await step(vu, form.jar, oidcEndpoints.page, { method: 'GET', path, readText: true })
      const action = page.status === 200 ? formAction(page.text) : undefined
      if (action === undefined) return undefined
      response = await step(vu, form.jar, oidcEndpoints.consent, { method: 'POST', path: action, form: {} })
    } else {
      response = await step(vu, form.jar, oidcEndpoints.resume, { method: 'GET', path })
    }
    if (!response.ok || response.location === undefined) return undefined
    next = response.location
  }
  return undefined
}

/** After a sign-in's redirect: the code, then the tokens (client_secret_basic); true when an access and an ID token came. */
export async function finishSignIn (vu: VirtualUser, form: SignInForm, client: LabOidcClient, location: string): Promise<boolean> {
  const code = await codeFrom(vu, form, client, location)
  if (code === undefined) return false
  const basic = Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString('base64')
  const tokens = await vu.request(oidcEndpoints.token, {
    method: 'POST',
    path: '/oidc/token',
    headers: { authorization: `Basic ${basic}` },
    form: { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: form.verifier },
  })
  const body = tokens.body as { access_token?: unknown, id_token?: unknown } | undefined
  return tokens.ok && typeof body?.access_token === 'string' && typeof body.id_token === 'string'
}
