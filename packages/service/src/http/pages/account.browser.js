// The account page's script (GET /account/account.js), run by the browser as it is: no build step.
// Each action calls tollbooth's REST API with fetch, in the order an integrator's page would, and
// shows the answer in the status line (a live region). The tokens live in this module's variables
// only: never in localStorage or sessionStorage, so they leave with the tab (docs/how-to/account-page.md).
// It writes text, never markup: the page's policy refuses HTML parsed from strings (Trusted Types).

const api = '/api/v1'

/** The signed-in session: `{ accessToken, refreshToken, user }`, or null. In memory only. */
let session = null
/** A password login's challenge while it waits for its second step, or null. */
let challenge = null
/** The TOTP enrolment under way: 'account' (signed in) or 'challenge' (an enrolment challenge, TOLLBOOTH_SECOND_FACTOR=required). */
let enrolment = null

const byId = (id) => document.getElementById(id)
const status = byId('status')

/** An error answer of the API: `{ error: { code, message } }`. */
class ApiError extends Error {
  constructor (httpStatus, code, message) {
    super(message)
    this.httpStatus = httpStatus
    this.code = code
  }
}

/** One line in the live region; a refusal shows its code, which is what a program matches on. */
function say (message, code) {
  status.textContent = code === undefined ? message : `${message} (${code})`
  status.dataset.kind = code === undefined ? 'info' : 'error'
  if (code === undefined) delete status.dataset.code
  else status.dataset.code = code
}

async function call (method, path, { body, token } = {}) {
  const headers = {}
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  const response = await fetch(api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await response.text()
  let data = null
  try { data = text.length === 0 ? null : JSON.parse(text) } catch { data = null }
  if (!response.ok) {
    throw new ApiError(response.status, data?.error?.code ?? `HTTP_${response.status}`, data?.error?.message ?? response.statusText)
  }
  return data
}

/** A Bearer call; an access token that expired is renewed once with the refresh token, and the call made again. */
async function callSignedIn (method, path, options = {}) {
  try {
    return await call(method, path, { ...options, token: session.accessToken })
  } catch (err) {
    if (!(err instanceof ApiError) || err.code !== 'AUTH_TOKEN_INVALID') throw err
    const renewed = await call('POST', '/auth/refresh', { body: { refreshToken: session.refreshToken } })
    session = { ...session, accessToken: renewed.accessToken, refreshToken: renewed.refreshToken }
    return await call(method, path, { ...options, token: session.accessToken })
  }
}

/** The access token's `amr` (how this sign-in was made), read from its payload for display only: the API verifies tokens, not this page. */
function signInMethods (accessToken) {
  try {
    const payload = accessToken.split('.')[1].replaceAll('-', '+').replaceAll('_', '/')
    const amr = JSON.parse(atob(payload)).amr
    return Array.isArray(amr) ? amr.join(', ') : 'pwd'
  } catch {
    return 'unknown'
  }
}

function show (id, visible) { byId(id).hidden = !visible }

/** Moves the focus to a section's heading, so a keyboard or screen reader user lands where the page changed. */
function focusHeading (id) { byId(id).focus() }

function webAuthnAvailable () {
  return typeof PublicKeyCredential === 'function' &&
    typeof PublicKeyCredential.parseCreationOptionsFromJSON === 'function' &&
    typeof PublicKeyCredential.parseRequestOptionsFromJSON === 'function'
}

/** What to tell the person when something went wrong. */
function report (err) {
  if (err instanceof ApiError) say(`Refused: ${err.message}`, err.code)
  else if (err instanceof DOMException && err.name === 'NotAllowedError') say('The browser\'s passkey prompt was closed or timed out; nothing changed.', err.name)
  else say(`Something went wrong: ${err.message}`, err.name ?? 'Error')
}

/** Runs an action with its control disabled meanwhile; its outcome, or its failure, is the status line's. */
function action (control, work) {
  return async (event) => {
    event?.preventDefault()
    const button = control instanceof HTMLFormElement ? control.querySelector('button[type=submit]') : control
    button.disabled = true
    status.textContent = 'Working…'
    status.dataset.kind = 'busy'
    delete status.dataset.code
    try {
      await work(event)
    } catch (err) {
      report(err)
    } finally {
      button.disabled = false
      // How many actions have ended: what a test (or a curious integrator) waits on.
      document.body.dataset.actionsDone = String(Number(document.body.dataset.actionsDone ?? '0') + 1)
    }
  }
}

// --- signed in, signed out ---------------------------------------------------------------------

async function signedIn (answer, message) {
  session = { accessToken: answer.accessToken, refreshToken: answer.refreshToken, user: answer.user }
  challenge = null
  for (const form of document.querySelectorAll('#sign-in form, #register form')) form.reset()
  show('second-step', false)
  show('sign-in', false)
  show('register', false)
  byId('account-email').textContent = answer.user.email
  byId('account-amr').textContent = signInMethods(answer.accessToken)
  show('account', true)
  document.body.dataset.state = 'signed-in'
  await refreshAccount()
  focusHeading('account-heading')
  say(message)
}

function signedOut (message) {
  session = null
  challenge = null
  enrolment = null
  clearTotpEnrolment()
  clearRecoveryCodes()
  byId('passkey-list').replaceChildren()
  show('account', false)
  show('second-step', false)
  show('sign-in', true)
  show('register', true)
  document.body.dataset.state = 'signed-out'
  focusHeading('sign-in-heading')
  say(message)
}

/** The account's passkeys and factors, as GET /me/passkeys and GET /me/factors list them. */
async function refreshAccount () {
  const passkeys = await callSignedIn('GET', '/me/passkeys')
  const list = byId('passkey-list')
  list.replaceChildren(...passkeys.items.map((passkey) => {
    const item = document.createElement('li')
    item.textContent = `${passkey.name}${passkey.backedUp ? ' (synced)' : ''}, added ${new Date(passkey.createdAt).toLocaleString()}`
    return item
  }))
  if (passkeys.items.length === 0) {
    const none = document.createElement('li')
    none.textContent = 'None yet.'
    list.replaceChildren(none)
  }
  if (byId('totp-state') === null) return
  const factors = await callSignedIn('GET', '/me/factors')
  const totp = factors.items.find((item) => item.method === 'totp')
  const codes = factors.items.find((item) => item.method === 'recovery_code')
  const confirmed = totp?.confirmed === true
  byId('totp-state').textContent = confirmed
    ? `Set up. Recovery codes left: ${codes?.remaining ?? 0}.`
    : 'Not set up.'
  show('totp-start', !confirmed)
}

// --- register and sign in ----------------------------------------------------------------------

const registerForm = byId('register-form')
registerForm.addEventListener('submit', action(registerForm, async () => {
  const answer = await call('POST', '/auth/register', { body: { email: byId('register-email').value, password: byId('register-password').value } })
  if (answer.accessToken === undefined) {
    // TOLLBOOTH_REGISTRATION_MODE=enumeration-safe: the same answer for a new and a taken address.
    registerForm.reset()
    say(`${answer.message} Open the link in the mail, then sign in.`)
    return
  }
  await signedIn(answer, 'Account created; you are signed in.')
}))

const passwordForm = byId('password-sign-in')
passwordForm.addEventListener('submit', action(passwordForm, async () => {
  const answer = await call('POST', '/auth/login', { body: { email: byId('sign-in-email').value, password: byId('sign-in-password').value } })
  if (answer.mfaRequired !== true) {
    await signedIn(answer, 'Signed in with your password.')
    return
  }
  challenge = answer.challenge
  if (answer.enrolmentRequired === true) {
    // This service requires a second factor and the account has none: enrol TOTP with the challenge.
    await startTotpEnrolment('challenge')
    return
  }
  show('second-step', true)
  document.body.dataset.state = 'second-step'
  focusHeading('second-step-heading')
  say('Password accepted. Finish with a code from your authenticator app or a recovery code.')
}))

const secondStepForm = byId('second-step')
secondStepForm.addEventListener('submit', action(secondStepForm, async () => {
  const method = secondStepForm.elements.method.value
  try {
    const answer = await call('POST', '/auth/login/second-factor', { body: { challenge, method, code: byId('second-step-code').value.trim() } })
    await signedIn(answer, method === 'totp' ? 'Signed in with your password and a code from your app.' : 'Signed in with your password and a recovery code; that code is now spent.')
  } catch (err) {
    byId('second-step-code').select()
    if (err instanceof ApiError && err.code === 'LOGIN_CHALLENGE_INVALID') {
      // Spent or expired: the password step again.
      challenge = null
      show('second-step', false)
      document.body.dataset.state = 'signed-out'
    }
    throw err
  }
}))

const passkeySignIn = byId('passkey-sign-in')
passkeySignIn.addEventListener('click', action(passkeySignIn, async () => {
  if (!webAuthnAvailable()) { say('This browser cannot use passkeys here.', 'WEBAUTHN_UNAVAILABLE'); return }
  // No email: the options name no credential, and the browser offers the passkeys it holds for this site.
  const options = await call('POST', '/auth/passkey/options')
  const assertion = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) })
  const answer = await call('POST', '/auth/passkey/verify', { body: { response: assertion.toJSON() } })
  await signedIn(answer, 'Signed in with a passkey.')
}))

// --- the signed-in account -----------------------------------------------------------------------

const addPasskeyForm = byId('add-passkey')
addPasskeyForm.addEventListener('submit', action(addPasskeyForm, async () => {
  if (!webAuthnAvailable()) { say('This browser cannot make passkeys here.', 'WEBAUTHN_UNAVAILABLE'); return }
  const options = await callSignedIn('POST', '/me/passkeys/options')
  const credential = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) })
  const name = byId('passkey-name').value.trim()
  const added = await callSignedIn('POST', '/me/passkeys', { body: { response: credential.toJSON(), ...(name === '' ? {} : { name }) } })
  addPasskeyForm.reset()
  await refreshAccount()
  say(`Passkey "${added.name}" added. You can sign in with it, no email typed.`)
}))

function clearTotpEnrolment () {
  byId('totp-secret')?.replaceChildren()
  const link = byId('totp-uri')
  if (link !== null) { link.replaceChildren(); link.href = '#' }
  byId('totp-confirm')?.reset()
  if (byId('totp-enrolment') !== null) show('totp-enrolment', false)
}

function clearRecoveryCodes () {
  byId('recovery-code-list')?.replaceChildren()
  if (byId('recovery-codes') !== null) show('recovery-codes', false)
}

/** A secret shown once: POST /me/factors/totp signed in, POST /auth/login/totp with an enrolment challenge. */
async function startTotpEnrolment (mode) {
  const secret = mode === 'account'
    ? await callSignedIn('POST', '/me/factors/totp')
    : await call('POST', '/auth/login/totp', { body: { challenge } })
  enrolment = mode
  byId('totp-secret').textContent = secret.secret
  const link = byId('totp-uri')
  link.textContent = secret.uri
  link.href = secret.uri
  show('totp-enrolment', true)
  document.body.dataset.state = mode === 'account' ? 'signed-in' : 'enrolment'
  focusHeading('totp-enrolment-heading')
  say(mode === 'account'
    ? 'Add the secret to your authenticator app, then type its code.'
    : 'This service requires an authenticator app: add the secret to yours, then type its code to finish signing in.')
}

function showRecoveryCodes (codes) {
  byId('recovery-code-list').replaceChildren(...codes.map((code) => {
    const item = document.createElement('li')
    item.textContent = code
    return item
  }))
  show('recovery-codes', true)
  focusHeading('recovery-codes-heading')
}

const totpStart = byId('totp-start')
totpStart?.addEventListener('click', action(totpStart, async () => { await startTotpEnrolment('account') }))

const totpConfirmForm = byId('totp-confirm')
totpConfirmForm?.addEventListener('submit', action(totpConfirmForm, async () => {
  const code = byId('totp-code').value.trim()
  if (enrolment === 'challenge') {
    const answer = await call('POST', '/auth/login/second-factor', { body: { challenge, method: 'totp', code } })
    clearTotpEnrolment()
    await signedIn(answer, 'Authenticator app set up; you are signed in. Keep your recovery codes.')
    showRecoveryCodes(answer.recoveryCodes)
    return
  }
  const answer = await callSignedIn('POST', '/me/factors/totp/confirm', { body: { code } })
  clearTotpEnrolment()
  enrolment = null
  await refreshAccount()
  showRecoveryCodes(answer.recoveryCodes)
  say('Authenticator app set up: your next password sign-in asks for its code. Keep your recovery codes.')
}))

const recoveryDone = byId('recovery-codes-done')
recoveryDone?.addEventListener('click', () => {
  clearRecoveryCodes()
  focusHeading('account-heading')
  say('Recovery codes hidden; they are not shown again.')
})

const signOut = byId('sign-out')
signOut.addEventListener('click', action(signOut, async () => {
  try {
    await call('POST', '/auth/logout', { body: { refreshToken: session.refreshToken } })
  } finally {
    // Forgotten here whatever the answer: the tab holds no token after this.
    signedOut('Signed out.')
  }
}))

// Opened at a loopback address (http://127.0.0.1:3000): browsers take no address as a passkey's
// relying party, and tollbooth's development default names it localhost. Point there.
if (/^(127(\.\d{1,3}){3}|\[::1\])$/.test(window.location.hostname)) {
  const named = new URL(window.location.href)
  named.hostname = 'localhost'
  const link = byId('origin-note-link')
  link.href = named.href
  link.textContent = named.href
  show('origin-note', true)
}

document.body.dataset.state = 'signed-out'
document.body.dataset.ready = 'true'
