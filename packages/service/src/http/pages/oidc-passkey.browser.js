// The OpenID Connect sign-in page's passkey button (GET /oidc/interaction/passkey.js), run by the
// browser as it is: no build step. It asks the API for a challenge, lets the browser sign it with a
// passkey the person picks, and posts the assertion to this sign-in's form; the service verifies
// it and continues the sign-in as a password would. A browser without passkeys never shows the
// button. It writes text, never markup.

const button = document.getElementById('passkey-sign-in')
const status = document.getElementById('passkey-status')
const form = document.getElementById('passkey-form')

async function signIn () {
  const answer = await fetch('/api/v1/auth/passkey/options', { method: 'POST' })
  if (!answer.ok) {
    const seconds = Number(answer.headers.get('retry-after'))
    throw new Error(Number.isFinite(seconds) && seconds > 0 ? `The service is busy. Try again in ${seconds} s.` : 'The service could not start a passkey sign-in. Try again.')
  }
  const options = await answer.json()
  const assertion = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) })
  form.elements.response.value = JSON.stringify(assertion.toJSON())
  form.submit()
}

if (typeof window.PublicKeyCredential?.parseRequestOptionsFromJSON === 'function') {
  button.hidden = false
  button.addEventListener('click', async () => {
    button.disabled = true
    status.textContent = 'Waiting for your passkey…'
    try {
      await signIn()
    } catch (err) {
      // NotAllowedError: the person closed the browser's prompt, or it timed out.
      status.textContent = err instanceof DOMException && err.name === 'NotAllowedError' ? 'No passkey was used. Try again, or sign in with your password.' : err.message
      button.disabled = false
    }
  })
}
