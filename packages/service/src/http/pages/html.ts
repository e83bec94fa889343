/**
 * HTML by tagged template: every interpolated value is escaped unless it is already `SafeHtml`
 * (the result of another `html` template), so a page cannot splice text in as markup by mistake.
 */

/** Markup known to be safe: made by `html`, whose values were escaped, or directly for a constant the code owns. */
export class SafeHtml {
  readonly #markup: string
  constructor (markup: string) { this.#markup = markup }
  toString (): string { return this.#markup }
}

/** What a template may interpolate: text (escaped), markup, a list of either; null, undefined and false render nothing. */
export type HtmlValue = string | number | SafeHtml | null | undefined | false | readonly HtmlValue[]

const escapes: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text for an element's content or a quoted attribute value. */
export function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, (character) => escapes[character] ?? character)
}

function render (value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return ''
  if (value instanceof SafeHtml) return value.toString()
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('')
  return escapeHtml(String(value))
}

/** `html\`<p>${text}</p>\``: the literal parts as written, each value escaped (or kept, if SafeHtml). */
export function html (literals: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let markup = literals[0] ?? ''
  for (let i = 0; i < values.length; i++) markup += render(values[i]) + (literals[i + 1] ?? '')
  return new SafeHtml(markup)
}
