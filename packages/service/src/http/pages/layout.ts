/**
 * The layout of the pages tollbooth serves itself (the account page, sign-in pages): one HTML
 * document with a small stylesheet, its headers (a strict Content-Security-Policy, no-store), and
 * the answer for a page's served script. Pages render once, at start, or per request with `html`.
 */
import { createHash } from 'node:crypto'
import type { FastifyReply } from 'fastify'
import { html, SafeHtml } from './html.js'

export interface PageOptions {
  /** The document's title: what the tab shows and a screen reader announces first. */
  title: string
  /** The page's content, inside <main> (its first heading an <h1>). */
  main: SafeHtml
  /** Same-origin paths of the page's module scripts (served by `sendScript`). */
  scripts?: readonly string[]
}

/** Readable on any screen, the focus always visible, `hidden` always hiding. Inline, allowed by its hash. */
const stylesheet = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0 auto; max-width: 40rem; padding: 1rem; }
[hidden] { display: none !important; }
section { border-top: 1px solid GrayText; margin-top: 1.5rem; }
label { display: block; margin-top: 0.75rem; }
input { display: block; font: inherit; padding: 0.35rem; width: 100%; max-width: 24rem; box-sizing: border-box; }
input[type=radio] { display: inline; width: auto; }
fieldset label { display: inline; margin: 0 1rem 0 0.25rem; }
button { font: inherit; margin-top: 0.75rem; padding: 0.35rem 0.9rem; }
:focus-visible { outline: 3px solid Highlight; outline-offset: 2px; }
code, .secret { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.status { min-height: 1.5em; padding: 0.5rem; border-left: 4px solid GrayText; }
.status[data-kind=error] { border-left-color: #c00; }
`

const styleHash = createHash('sha256').update(stylesheet).digest('base64')

export interface PagePolicyOptions {
  /** Where the page's forms may post, and be redirected after posting (Chromium checks both): default the page's own origin. */
  formAction?: readonly string[]
}

/**
 * Nothing loads but what the page names: its scripts from its own origin (no inline script),
 * its stylesheet by hash, fetch to its own origin; no frame, no base, no plugin; DOM sinks that
 * parse HTML from strings refused (Trusted Types), so the script writes text, never markup.
 */
function pageSecurityPolicy (options: PagePolicyOptions = {}): string {
  const formAction = options.formAction ?? ["'self'"]
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'sha256-${styleHash}'`,
    "connect-src 'self'",
    `form-action ${formAction.join(' ')}`,
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
  ].join('; ')
}

const defaultPolicy = pageSecurityPolicy()

/**
 * For the pages oidc-provider renders itself (its auto-submitting forms) and the ones it renders with
 * ours (errors, logout): nothing loads but scripts and styles the page names, no frame, no base.
 * oidc-provider adds each inline script's hash to `script-src`. Forms are not restricted: the
 * provider's post to the client's redirect URI, whose origin is not known here.
 */
export const providerPagePolicy = [
  "default-src 'none'",
  "script-src 'self'",
  `style-src 'sha256-${styleHash}'`,
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** The whole document. */
export function renderPage (options: PageOptions): string {
  const scripts = (options.scripts ?? []).map((src) => html`<script type="module" src="${src}"></script>`)
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${options.title}</title>
<style>${new SafeHtml(stylesheet)}</style>
${scripts}
</head>
<body>
<main>
${options.main}
</main>
</body>
</html>
`.toString()
}

/** A page's answer: HTML, the page policy, and no cache keeps it (it is where tokens are handled). */
export async function sendPage (reply: FastifyReply, markup: string, policy?: PagePolicyOptions): Promise<FastifyReply> {
  return await reply
    .headers({ 'content-security-policy': policy === undefined ? defaultPolicy : pageSecurityPolicy(policy), 'cache-control': 'no-store', pragma: 'no-cache' })
    .type('text/html; charset=utf-8')
    .send(markup)
}

/** A page's script, served from its own origin (the policy allows no inline script). */
export async function sendScript (reply: FastifyReply, source: string): Promise<FastifyReply> {
  return await reply
    .headers({ 'cache-control': 'no-store', pragma: 'no-cache' })
    .type('text/javascript; charset=utf-8')
    .send(source)
}
