/**
 * Escaping for the one place where the lab's result (attacker-influenced strings: scenario
 * names, labels, settings, error text) meets HTML.
 */

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text and attribute values (always double-quoted). */
export function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, (char) => entities[char] ?? char)
}

/**
 * JSON for `<script type="application/json">`: with `<`, `>` and `&` as \u escapes no string
 * can close the element or open a comment, and U+2028/U+2029 cannot end a line in older parsers.
 * `JSON.parse(element.textContent)` returns the value unchanged.
 */
export function jsonForScriptElement (value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
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
