/**
 * Headless Chromium for the page tests: Debian's own build (/usr/bin/chromium), driven by
 * playwright-core over the DevTools protocol. No browser is ever downloaded; without the binary
 * this fails and says what to install. Each page may get a virtual authenticator (the protocol's
 * WebAuthn domain), which answers the page's passkey ceremonies as a platform authenticator would.
 */
import fs from 'node:fs'
import { chromium, type Browser, type CDPSession, type Page } from 'playwright-core'

const chromiumPath = '/usr/bin/chromium'

const chromiumArgs = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]

export async function launchChromium (): Promise<Browser> {
  if (!fs.existsSync(chromiumPath)) {
    throw new Error(`${chromiumPath} not found: install Debian's chromium package (apt-get install chromium). ` +
      'The page tests use that browser and never download one.')
  }
  return await chromium.launch({ executablePath: chromiumPath, headless: true, args: chromiumArgs })
}

/** A credential the virtual authenticator holds (the protocol's WebAuthn.Credential, the fields the tests read). */
interface VirtualCredential {
  credentialId: string
  isResidentCredential: boolean
  rpId?: string
  userHandle?: string
  signCount: number
}

/** What one of tollbooth's pages shows once an action has ended: its status line and its state. */
export interface PageOutcome { kind: string, code: string | null, text: string, state: string }

/**
 * Triggers one of a tollbooth page's actions and waits for it to end (the pages count ended actions
 * in `data-actions-done`), then reads the status line and the page's state.
 */
export async function pageAction (page: Page, trigger: () => Promise<void>, timeoutMs = 30_000): Promise<PageOutcome> {
  const before = Number(await page.evaluate('document.body.dataset.actionsDone ?? "0"'))
  await trigger()
  // A selector, not a function: the pages' policy allows no eval, and the tests run under it.
  await page.waitForSelector(`body[data-actions-done="${before + 1}"]`, { state: 'attached', timeout: timeoutMs })
  return await page.evaluate(`({
    kind: document.getElementById('status').dataset.kind,
    code: document.getElementById('status').dataset.code ?? null,
    text: document.getElementById('status').textContent,
    state: document.body.dataset.state,
  })`)
}

export interface VirtualAuthenticator {
  cdp: CDPSession
  authenticatorId: string
  credentials: () => Promise<VirtualCredential[]>
}

/**
 * A CTAP2 platform authenticator on the page: it keeps discoverable (resident) credentials,
 * verifies the user (as a PIN or a fingerprint would) and answers every prompt at once.
 */
export async function addVirtualAuthenticator (page: Page): Promise<VirtualAuthenticator> {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('WebAuthn.enable', { enableUI: false })
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  return {
    cdp,
    authenticatorId,
    credentials: async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials,
  }
}
