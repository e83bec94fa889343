/**
 * The account page (GET /account): register, sign in (passkey, password and a second factor),
 * add a passkey, enrol TOTP, sign out. Static markup, rendered once; its script
 * (account.browser.js) calls the REST API and shows each answer in the status line.
 */
import fs from 'node:fs'
import path from 'node:path'
import { passwordMinLength } from '../../accounts/index.js'
import { packageRoot } from '../../paths.js'
import { html, type SafeHtml } from './html.js'
import { renderPage } from './layout.js'

export interface AccountPageOptions {
  /** Where the page's script is served. */
  scriptPath: string
  /** TOLLBOOTH_SECOND_FACTOR: with `off` the page offers no TOTP. */
  secondFactor: 'allowed' | 'required' | 'off'
}

function field (id: string, label: string, attributes: SafeHtml): SafeHtml {
  return html`<label for="${id}">${label}</label>
<input id="${id}" ${attributes}>`
}

const signIn = html`<section id="sign-in" aria-labelledby="sign-in-heading">
<h2 id="sign-in-heading" tabindex="-1">Sign in</h2>
<h3>With a passkey</h3>
<p>No email needed: your browser offers the passkeys it holds for this site.</p>
<button type="button" id="passkey-sign-in">Sign in with a passkey</button>
<form id="password-sign-in" method="post">
<h3>With your password</h3>
${field('sign-in-email', 'Email', html`name="email" type="email" autocomplete="username" required`)}
${field('sign-in-password', 'Password', html`name="password" type="password" autocomplete="current-password" required`)}
<button type="submit">Sign in</button>
</form>
<form id="second-step" method="post" hidden>
<h3 id="second-step-heading" tabindex="-1">Second step</h3>
<p>Your password was right. Finish signing in with a second factor.</p>
<fieldset>
<legend>Finish with</legend>
<input type="radio" id="second-step-totp" name="method" value="totp" checked><label for="second-step-totp">a code from your authenticator app</label>
<input type="radio" id="second-step-recovery" name="method" value="recovery_code"><label for="second-step-recovery">a recovery code</label>
</fieldset>
${field('second-step-code', 'Code', html`name="code" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" required`)}
<button type="submit">Finish signing in</button>
</form>
</section>`

const register = html`<section id="register" aria-labelledby="register-heading">
<h2 id="register-heading">Create an account</h2>
<form id="register-form" method="post">
${field('register-email', 'Email', html`name="email" type="email" autocomplete="username" required`)}
${field('register-password', 'Password', html`name="password" type="password" autocomplete="new-password" minlength="${passwordMinLength}" aria-describedby="register-password-hint" required`)}
<p id="register-password-hint">At least ${passwordMinLength} characters; a common password is refused.</p>
<button type="submit">Create the account</button>
</form>
</section>`

function account (totp: boolean): SafeHtml {
  return html`<section id="account" aria-labelledby="account-heading" hidden>
<h2 id="account-heading" tabindex="-1">Signed in</h2>
<p>Signed in as <strong id="account-email"></strong>. This sign-in counts as: <span id="account-amr"></span>.</p>
<h3>Passkeys</h3>
<ul id="passkey-list"></ul>
<form id="add-passkey" method="post">
${field('passkey-name', 'Name of the new passkey (optional)', html`name="name" maxlength="64" autocomplete="off"`)}
<button type="submit">Add a passkey</button>
</form>
${totp
  ? html`<h3>Authenticator app</h3>
<p id="totp-state">Not set up.</p>
<button type="button" id="totp-start">Set up an authenticator app</button>`
  : html``}
<h3>Leave</h3>
<button type="button" id="sign-out">Sign out</button>
</section>`
}

const totpEnrolment = html`<section id="totp-enrolment" aria-labelledby="totp-enrolment-heading" hidden>
<h2 id="totp-enrolment-heading" tabindex="-1">Set up your authenticator app</h2>
<p>Add this account to your authenticator app with the secret or the otpauth link below, then type
the code it shows. They are shown this once.</p>
<dl>
<dt>Secret</dt>
<dd><code id="totp-secret" class="secret"></code></dd>
<dt>otpauth link</dt>
<dd><a id="totp-uri" class="secret" href="#"></a></dd>
</dl>
<form id="totp-confirm" method="post">
${field('totp-code', 'Code from the app', html`name="code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code" required`)}
<button type="submit">Confirm</button>
</form>
</section>`

const recoveryCodes = html`<section id="recovery-codes" aria-labelledby="recovery-codes-heading" hidden>
<h2 id="recovery-codes-heading" tabindex="-1">Your recovery codes</h2>
<p>Each code signs you in once when you do not have your app. They are shown this once: keep them
somewhere safe.</p>
<ol id="recovery-code-list" class="secret"></ol>
<button type="button" id="recovery-codes-done">I have kept them</button>
</section>`

/** The whole page, rendered once at start. */
export function renderAccountPage (options: AccountPageOptions): string {
  const totp = options.secondFactor !== 'off'
  return renderPage({
    title: 'Your account · tollbooth',
    scripts: [options.scriptPath],
    main: html`<h1>Your account</h1>
<p>A page to try tollbooth: it calls the service's API from this tab, and keeps the tokens in this
tab's memory only, so reloading the page signs you out.</p>
<noscript><p>This page needs JavaScript: it calls the API from the browser.</p></noscript>
<p id="origin-note" hidden>Passkeys need this page by a name, not an address: open <a id="origin-note-link" href="#"></a>.</p>
<p id="status" class="status" role="status" aria-live="polite" aria-atomic="true"></p>
${signIn}
${register}
${account(totp)}
${totp ? [totpEnrolment, recoveryCodes] : null}`,
  })
}

/** The page's script as the browser runs it: a plain file in the package, read once at start. */
export function readAccountPageScript (): string {
  return fs.readFileSync(path.join(packageRoot, 'src', 'http', 'pages', 'account.browser.js'), 'utf8')
}
