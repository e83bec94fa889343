/**
 * Headless Chromium for the report tests and screenshots: Debian's own build, driven by
 * playwright-core. No browser is ever downloaded; without /usr/bin/chromium this fails and says
 * what to install.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { chromium, type BrowserContext, type Page } from 'playwright-core'

const chromiumPath = '/usr/bin/chromium'

const chromiumArgs = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]

export interface Chromium {
  context: BrowserContext
  /** Closes the browser and removes its profile folder. */
  close: () => Promise<void>
}

/** One browser with a fresh, temporary profile; reuse it across a file's tests. */
export async function launchChromium (viewport = { width: 1280, height: 900 }): Promise<Chromium> {
  if (!fs.existsSync(chromiumPath)) {
    throw new Error(`${chromiumPath} not found: install Debian's chromium package (apt-get install chromium). ` +
      'The report tests use that browser and never download one.')
  }
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-chromium-'))
  try {
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: chromiumPath, headless: true, args: chromiumArgs, viewport, deviceScaleFactor: 1,
    })
    return {
      context,
      close: async () => {
        await context.close()
        fs.rmSync(userDataDir, { recursive: true, force: true })
      },
    }
  } catch (err) {
    fs.rmSync(userDataDir, { recursive: true, force: true })
    throw err
  }
}

/** What a page did while it loaded: anything here but the page's own URL is a network request. */
export interface PageActivity {
  page: Page
  url: string
  requests: string[]
  consoleErrors: string[]
  pageErrors: string[]
  dialogs: string[]
}

/**
 * Opens an HTML file and waits until its charts are drawn (`data-charts-drawn` on <body>, set by
 * the report's script) or the timeout passes; records requests, console errors, uncaught errors
 * and dialogs (an alert would mean injected script ran).
 */
export async function openReport (browser: Chromium, htmlFile: string, timeoutMs = 20_000): Promise<PageActivity> {
  const page = await browser.context.newPage()
  const url = pathToFileURL(path.resolve(htmlFile)).href
  const activity: PageActivity = { page, url, requests: [], consoleErrors: [], pageErrors: [], dialogs: [] }
  page.on('request', (request) => { activity.requests.push(request.url()) })
  page.on('console', (message) => { if (message.type() === 'error') activity.consoleErrors.push(message.text()) })
  page.on('pageerror', (error) => { activity.pageErrors.push(error.message) })
  page.on('dialog', (dialog) => {
    activity.dialogs.push(`${dialog.type()}: ${dialog.message()}`)
    void dialog.dismiss()
  })
  await page.goto(url, { waitUntil: 'load', timeout: timeoutMs })
  // A string: this project compiles without the DOM library.
  await page.waitForFunction('document.body.hasAttribute("data-charts-drawn")', undefined, { timeout: timeoutMs })
    .catch(() => { /* the caller asserts on what the page did */ })
  return activity
}
