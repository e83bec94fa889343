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

export { renderCsv, csvField } from './csv.js'
export { renderHtml, contentSecurityPolicy, type HtmlAssets } from './html.js'
export { renderText } from './text.js'

/**
 * Chart.js's minified UMD build from the installed package. The package's `exports` map does
 * not expose dist/ files, so resolve its CommonJS entry (dist/chart.cjs) and take the build
 * beside it. The source-map comment goes: a report opened with devtools must not ask for it.
 */
export async function loadHtmlAssets (): Promise<HtmlAssets> {
  const entry = createRequire(import.meta.url).resolve('chart.js')
  const chartJs = await fs.readFile(path.join(path.dirname(entry), 'chart.umd.min.js'), 'utf8')
  return { chartJs: chartJs.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n') }
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
