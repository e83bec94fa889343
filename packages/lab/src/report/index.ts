/**
 * The lab's reports of one result: result.json, the CSVs and report.html written to a folder.
 * The only module of report/ that touches the file system; the renderers are pure.
 */
import fs from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import type { LabResult } from '../result.js'
import { renderCsv } from './csv.js'
import { renderHtml, type HtmlAssets } from './html.js'

export { renderHtml, contentSecurityPolicy, type HtmlAssets } from './html.js'
export { renderText } from './text.js'
export { formatMs } from './format.js'

/**
 * The page's template, and its scripts, read from built files. Chart.js: its minified UMD build from the installed
 * package (the `exports` map hides dist/, so resolve the CommonJS entry and take the build beside
 * it), without its source-map comment: a report opened with devtools must not ask for it.
 * The chart code: charts/page.ts and its imports, compiled by `npm run build`
 * (charts/tsconfig.page.json) into one file of AMD modules, run here by a loader of a few lines.
 */
export async function loadHtmlAssets (): Promise<HtmlAssets> {
  const entry = createRequire(import.meta.url).resolve('chart.js')
  const chartJs = await fs.readFile(path.join(path.dirname(entry), 'chart.umd.min.js'), 'utf8')
  const modules = await fs.readFile(new URL('./page.js', import.meta.url), 'utf8')
  const pageScript = `(() => {
'use strict'
const factories = new Map()
const loaded = new Map()
const define = (name, deps, factory) => { factories.set(name, { deps, factory }) }
const load = (name) => {
  if (loaded.has(name)) return loaded.get(name)
  const { deps, factory } = factories.get(name)
  const exports = {}
  loaded.set(name, exports)
  factory(...deps.map((dep) => dep === 'require' ? load : dep === 'exports' ? exports : load(dep)))
  return exports
}
${modules}
load('report/charts/page')
})()
`
  // The template is not compiled: it is read from src/ beside this module's source.
  const template = await fs.readFile(new URL('../../../src/report/template.html', import.meta.url), 'utf8')
  return { template, chartJs: chartJs.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n'), pageScript }
}

/** Writes result.json, every CSV and report.html into `outDir` (created if need be); returns the paths written. */
export async function writeReports (outDir: string, result: LabResult): Promise<string[]> {
  await fs.mkdir(outDir, { recursive: true })
  const files: Record<string, string> = {
    'result.json': `${JSON.stringify(result, null, 2)}\n`,
    ...renderCsv(result),
    'report.html': renderHtml(result, await loadHtmlAssets()),
  }
  const written: string[] = []
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(outDir, name)
    await fs.writeFile(file, content)
    written.push(file)
  }
  return written
}
