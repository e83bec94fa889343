/**
 * `node dist/scripts/screenshot-report.js <report.html> <out.png> [height]`: a PNG of a lab
 * report (the whole page, or its top `height` pixels), drawn by the same headless Chromium as
 * the report tests (Debian's /usr/bin/chromium). docs/images/lab-report.png is made with it.
 */
import fs from 'node:fs'
import { launchChromium, openReport } from '../test/helpers/chromium.js'

async function main (): Promise<number> {
  const [htmlFile, pngFile, heightText] = process.argv.slice(2)
  const height = heightText === undefined ? undefined : Number(heightText)
  if (htmlFile === undefined || pngFile === undefined || (height !== undefined && !(Number.isInteger(height) && height > 0))) {
    process.stderr.write('usage: node dist/scripts/screenshot-report.js <report.html> <out.png> [height in pixels]\n')
    return 2
  }
  if (!fs.existsSync(htmlFile)) {
    process.stderr.write(`screenshot-report: ${htmlFile} does not exist\n`)
    return 2
  }
  const browser = await launchChromium()
  try {
    const activity = await openReport(browser, htmlFile)
    const problems = [...activity.pageErrors, ...activity.consoleErrors]
    for (const problem of problems) process.stderr.write(`screenshot-report: the page reported: ${problem}\n`)
    if (height === undefined) {
      await activity.page.screenshot({ path: pngFile, fullPage: true })
    } else {
      const { width } = activity.page.viewportSize() ?? { width: 1280 }
      await activity.page.screenshot({ path: pngFile, fullPage: true, clip: { x: 0, y: 0, width, height } })
    }
    process.stdout.write(`${pngFile}\n`)
    return problems.length === 0 ? 0 : 1
  } finally {
    await browser.close()
  }
}

main().then((code) => { process.exitCode = code }, (err: unknown) => {
  process.stderr.write(`screenshot-report: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
