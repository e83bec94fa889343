/**
 * `node dist/scripts/screenshot-report.js <report.html> <out.png>`: a full-page PNG of a lab
 * report, drawn by the same headless Chromium as the report tests (Debian's /usr/bin/chromium).
 */
import fs from 'node:fs'
import { launchChromium, openReport } from '../test/helpers/chromium.js'

async function main (): Promise<number> {
  const [htmlFile, pngFile] = process.argv.slice(2)
  if (htmlFile === undefined || pngFile === undefined) {
    process.stderr.write('usage: node dist/scripts/screenshot-report.js <report.html> <out.png>\n')
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
    await activity.page.screenshot({ path: pngFile, fullPage: true })
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
