/**
 * Escaping for the one place where the lab's result (attacker-influenced strings: scenario
 * names, labels, settings, error text) meets HTML.
 */

/** Text and attribute values (always double-quoted). */
export function escapeHtml (text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;')
}

/**
 * JSON for `<script type="application/json">`: with `<`, `>` and `&` as \u escapes no string
 * can close the element or open a comment, and U+2028/U+2029 cannot end a line in older parsers.
 * `JSON.parse(element.textContent)` returns the value unchanged.
 */
export function jsonForScriptElement (value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029')
}

/**
 * JavaScript source for an inline `<script>`. Our code and Chart.js's build contain no
 * `</script` or `<!--`; this makes sure of it rather than trusting it. Were they there, it
 * would be inside string or regular-expression literals, where `<\/` means `</` and `<\x21`
 * means `<!`.
 */
export function scriptForInlineElement (source: string): string {
  return source.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\x21--')
}
