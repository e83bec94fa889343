// A single-page app signing in with tollbooth's OpenID Connect provider: the authorization code
// flow with PKCE (S256) as a public client (no secret), the token and userinfo endpoints called
// from the browser (CORS: the provider lets in the origins of the client's redirect URIs).
// oauth4webapi (panva's OAuth 2 / OpenID Connect client for browsers) does the protocol: PKCE,
// state, nonce, and the ID token's issuer, audience, expiry and nonce checks.
import * as oauth from './oauth4webapi.js'

/** config.json, beside this page: { "issuer", "clientId", "redirectUri" } (serve.mjs writes it). */
const config = await (await fetch('./config.json')).json()
const issuer = new URL(config.issuer)
// oauth4webapi refuses plain HTTP; allowed here only for an issuer on this machine (development).
const insecure = issuer.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(issuer.hostname)
const options = insecure ? { [oauth.allowInsecureRequests]: true } : {}
const client = { client_id: config.clientId }
const clientAuth = oauth.None()
/** What the sign-in needs when the browser comes back: kept for this tab only. */
const pendingKey = 'tollbooth-spa-sign-in'

const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, options))

// The tokens stay in this page's memory: never in localStorage, where any script of the origin could read them.
let tokens
/** The signed-in user's subject, from the validated ID token. */
let subject

function show (id, visible) {
  document.getElementById(id).hidden = !visible
}

function say (text) {
  document.getElementById('status').textContent = text
}

async function signIn () {
  const codeVerifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const nonce = oauth.generateRandomNonce()
  sessionStorage.setItem(pendingKey, JSON.stringify({ codeVerifier, state, nonce }))
  const url = new URL(as.authorization_endpoint)
  url.searchParams.set('client_id', client.client_id)
  url.searchParams.set('redirect_uri', config.redirectUri)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('scope', 'openid email profile')
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier))
  url.searchParams.set('code_challenge_method', 'S256')
  url.searchParams.set('state', state)
  url.searchParams.set('nonce', nonce)
  window.location.assign(url.href)
}

/** The browser is back from the provider with a code (or an error): exchange it for tokens. */
async function completeSignIn (callbackUrl) {
  const pending = JSON.parse(sessionStorage.getItem(pendingKey) ?? 'null')
  sessionStorage.removeItem(pendingKey)
  // The code leaves the address bar (and the history) at once.
  window.history.replaceState(null, '', config.redirectUri)
  if (pending === null) throw new Error('no sign-in was started in this tab')
  const params = oauth.validateAuthResponse(as, client, callbackUrl, pending.state)
  const response = await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, config.redirectUri, pending.codeVerifier, options)
  tokens = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: pending.nonce, requireIdToken: true })
  subject = oauth.getValidatedIdTokenClaims(tokens).sub
}

async function showUser () {
  const response = await oauth.userInfoRequest(as, client, tokens.access_token, options)
  // Userinfo's subject must be the ID token's (OpenID Connect Core 5.3.2): oauth4webapi checks it.
  const info = await oauth.processUserInfoResponse(as, client, subject, response)
  document.getElementById('email').textContent = info.email ?? subject
  document.getElementById('userinfo').textContent = JSON.stringify(info, null, 2)
  show('sign-in', false)
  show('signed-in', true)
  say('Signed in.')
}

async function refresh () {
  // The refresh token is spent by this call: the answer carries the next one (and a new ID token).
  const response = await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token, options)
  tokens = await oauth.processRefreshTokenResponse(as, client, response)
  const claims = oauth.getValidatedIdTokenClaims(tokens)
  if (claims !== undefined && claims.sub !== subject) throw new Error('the refreshed ID token names another user')
  await showUser()
  say('Signed in; tokens refreshed.')
}

function signOut () {
  const url = new URL(as.end_session_endpoint)
  url.searchParams.set('client_id', client.client_id)
  url.searchParams.set('id_token_hint', tokens.id_token)
  url.searchParams.set('post_logout_redirect_uri', config.redirectUri)
  tokens = undefined
  window.location.assign(url.href)
}

function failed (err) {
  const alert = document.getElementById('error')
  alert.textContent = `Sign-in failed: ${err instanceof Error ? err.message : String(err)}`
  show('error', true)
  show('sign-in', true)
  say('Signed out.')
}

document.getElementById('sign-in').addEventListener('click', () => { signIn().catch(failed) })
document.getElementById('refresh').addEventListener('click', () => { refresh().catch(failed) })
document.getElementById('sign-out').addEventListener('click', signOut)

const here = new URL(window.location.href)
if (here.searchParams.has('code') || here.searchParams.has('error')) {
  completeSignIn(here).then(showUser).catch(failed)
} else {
  show('sign-in', true)
  say('Signed out.')
}
