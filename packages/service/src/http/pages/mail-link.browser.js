// The mail-link pages' script (GET /account/mail-link.js), run by the browser as it is: no build
// step. It reads the link's token from the address, takes it out of the address bar and the
// history at once (a copied address or a later visitor of this tab does not carry it), and posts it
// to the API only when the person presses the button. It writes text, never markup (the page's
// policy refuses HTML parsed from strings).

const api = '/api/v1'
const byId = (id) => document.getElementById(id)
const status = byId('status')
const form = document.querySelector('form[data-action]')

const token = new URLSearchParams(location.search).get('token')
if (location.search !== '') history.replaceState(null, '', location.pathname)

/** One line in the live region; a refusal shows its code, which is what a program matches on. */
function say (message, code) {
  status.textContent = code === undefined ? message : `${message} (${code})`
  status.dataset.kind = code === undefined ? 'info' : 'error'
  if (code === undefined) delete status.dataset.code
  else status.dataset.code = code
}

/** What a refusal means to the person holding the link; the API's own message otherwise. */
function explain (response, code, message) {
  if (code === 'ACCOUNT_TOKEN_INVALID') return 'This link is used, expired or not whole. Ask for a new mail.'
  if (response.status === 503 || response.status === 429) {
    const seconds = Number(response.headers.get('retry-after'))
    return Number.isFinite(seconds) && seconds > 0 ? `The service is busy. Try again in ${seconds} s.` : 'The service is busy. Try again in a moment.'
  }
  return message
}

async function post (path, body) {
  const response = await fetch(api + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  if (response.ok) return
  let data = null
  try { data = await response.json() } catch { data = null }
  const code = data?.error?.code ?? `HTTP_${response.status}`
  const error = new Error(explain(response, code, data?.error?.message ?? response.statusText))
  error.code = code
  throw error
}

const actions = {
  'verify-email': async () => {
    await post('/auth/verify-email', { token })
    return 'Your address is confirmed.'
  },
  'reset-password': async () => {
    const password = byId('new-password').value
    if (password !== byId('new-password-again').value) {
      const error = new Error('The two passwords differ. Type the same password twice.')
      error.code = 'PASSWORDS_DIFFER'
      throw error
    }
    await post('/auth/password/reset', { token, password })
    return 'Your password is changed, and every session of the account has ended. Sign in with the new password.'
  },
}

/** Runs the form's action once; the page counts actions that ended (tests wait on the count). */
form.addEventListener('submit', async (event) => {
  event.preventDefault()
  const button = form.querySelector('button[type="submit"]')
  button.disabled = true
  try {
    say(await actions[form.dataset.action]())
    form.hidden = true
    byId('sign-in-link')?.removeAttribute('hidden')
    document.body.dataset.state = 'done'
  } catch (err) {
    say(err.message, err.code ?? 'NETWORK_ERROR')
    // A used or expired link cannot be tried again; anything else can.
    if (err.code === 'ACCOUNT_TOKEN_INVALID') form.hidden = true
  } finally {
    button.disabled = false
    document.body.dataset.actionsDone = String(Number(document.body.dataset.actionsDone ?? '0') + 1)
  }
})

if (token === null || token === '') {
  form.hidden = true
  byId('missing-token').hidden = false
  document.body.dataset.state = 'no-token'
} else {
  document.body.dataset.state = 'ready'
}
