/** The pages' HTML helper: what is interpolated is text unless it is markup made by `html`. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { escapeHtml, html, renderPage } from '../../src/http/pages/index.js'

describe('html templates', () => {
  it('escapes every interpolated string, in content and in attributes', () => {
    const hostile = '"><script>alert(1)</script>\'&'
    assert.equal(html`<p title="${hostile}">${hostile}</p>`.toString(),
      '<p title="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#39;&amp;">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#39;&amp;</p>')
    assert.equal(escapeHtml('a < b & c'), 'a &lt; b &amp; c')
  })

  it('keeps markup made by html, renders lists, and nothing for null, undefined and false', () => {
    const items = ['<a>', 'b'].map((item) => html`<li>${item}</li>`)
    assert.equal(html`<ul>${items}</ul>${null}${undefined}${false}${0}`.toString(), '<ul><li>&lt;a&gt;</li><li>b</li></ul>0')
  })

  it('renders a whole document: its title escaped, its scripts by src only', () => {
    const page = renderPage({ title: 'A <title>', main: html`<h1>Hi</h1>`, scripts: ['/x.js'] })
    assert.match(page, /<title>A &lt;title&gt;<\/title>/)
    assert.match(page, /<script type="module" src="\/x\.js"><\/script>/)
    assert.match(page, /<main>\n<h1>Hi<\/h1>\n<\/main>/)
  })
})
