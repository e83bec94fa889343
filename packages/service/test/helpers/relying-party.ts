/**
 * A relying party for the OpenID Connect tests, built on openid-client (panva's certified client,
 * not tollbooth's code): /login starts the code flow with PKCE (S256), a state and a nonce;
 * /callback hands the callback to the test, which exchanges the code (or does not) itself.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import * as client from 'openid-client'
import type pg from 'pg'
import { addClient } from '../../src/oidc/index.js'

interface Callback {
  url: URL
  state: string
  nonce: string
  verifier: string
}

export interface RelyingParty {
  url: string
  redirectUri: string
  postLogoutRedirectUri: string
  config: client.Configuration
  /** The next callback (the browser arriving back with a code or an error). */
  nextCallback (): Promise<Callback>
  /** The next arrival at the post-logout redirect URI. */
  nextLogout (): Promise<URL>
  /** Extra parameters of the next /login's authorization request. */
  authorizationParameters: Record<string, string>
  close (): Promise<void>
}

function waiter<T> (): { next: () => Promise<T>, deliver: (value: T) => void } {
  const waiting: Array<(value: T) => void> = []
  const delivered: T[] = []
  return {
    next: async () => await new Promise<T>((resolve) => {
      const value = delivered.shift()
      if (value !== undefined) resolve(value)
      else waiting.push(resolve)
    }),
    deliver: (value) => {
      const resolve = waiting.shift()
      if (resolve !== undefined) resolve(value)
      else delivered.push(value)
    },
  }
}

/** Listens first (its redirect URIs name its port), discovers the issuer when `connect` is called. */
async function startRelyingParty (): Promise<{ url: string, redirectUri: string, postLogoutRedirectUri: string, connect: (issuer: string, clientId: string, secret: string | undefined) => Promise<RelyingParty> }> {
  const pending = new Map<string, { nonce: string, verifier: string }>()
  const callbacks = waiter<Callback>()
  const logouts = waiter<URL>()
  let rp: RelyingParty | undefined
  const server = http.createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? '/', `http://${request.headers.host ?? '127.0.0.1'}`)
      if (url.pathname === '/login' && rp !== undefined) {
        const verifier = client.randomPKCECodeVerifier()
        const state = client.randomState()
        const nonce = client.randomNonce()
        pending.set(state, { nonce, verifier })
        const authorization = client.buildAuthorizationUrl(rp.config, {
          redirect_uri: rp.redirectUri,
          scope: 'openid email profile',
          code_challenge: await client.calculatePKCECodeChallenge(verifier),
          code_challenge_method: 'S256',
          state,
          nonce,
          ...rp.authorizationParameters,
        })
        response.writeHead(302, { location: authorization.href }).end()
        return
      }
      if (url.pathname === '/callback') {
        const state = url.searchParams.get('state') ?? ''
        const started = pending.get(state)
        response.writeHead(200, { 'content-type': 'text/html' }).end('<!DOCTYPE html><title>back at the application</title><h1 id="back">Back at the application</h1>')
        callbacks.deliver({ url, state, nonce: started?.nonce ?? '', verifier: started?.verifier ?? '' })
        return
      }
      if (url.pathname === '/logged-out') {
        response.writeHead(200, { 'content-type': 'text/html' }).end('<!DOCTYPE html><title>signed out</title><h1 id="out">Signed out</h1>')
        logouts.deliver(url)
        return
      }
      response.writeHead(404).end()
    })().catch((err: unknown) => { response.writeHead(500).end(String(err)) })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const close = async (): Promise<void> => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => { resolve() }))
  }
  return {
    url: base,
    redirectUri: `${base}/callback`,
    postLogoutRedirectUri: `${base}/logged-out`,
    connect: async (issuer, clientId, secret) => {
      const auth = secret === undefined ? client.None() : client.ClientSecretBasic(secret)
      const config = await client.discovery(new URL(issuer), clientId, undefined, auth, { execute: [client.allowInsecureRequests] })
      // The ID token from the token endpoint is verified against the issuer's JWK Set too.
      client.enableNonRepudiationChecks(config)
      rp = { url: base, redirectUri: `${base}/callback`, postLogoutRedirectUri: `${base}/logged-out`, config, nextCallback: callbacks.next, nextLogout: logouts.next, authorizationParameters: {}, close }
      return rp
    },
  }
}

/** A relying party registered (`tollbooth clients add`) as a confidential client (client_secret_basic) of its own redirect URIs, and connected to `issuer`. */
export async function registeredRelyingParty (db: pg.Pool, issuer: string, registration: { name: string, firstParty: boolean }): Promise<RelyingParty> {
  const party = await startRelyingParty()
  const added = await addClient(db, { clientId: undefined, name: registration.name, redirectUris: [party.redirectUri], postLogoutRedirectUris: [party.postLogoutRedirectUri], authMethod: 'client_secret_basic', jwks: undefined, firstParty: registration.firstParty })
  return await party.connect(issuer, added.clientId, added.secret)
}
