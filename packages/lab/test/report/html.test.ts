/**
 * The HTML report in a real browser (Debian's headless Chromium): it renders, every chart draws
 * pixels, the page makes no request but for itself, logs no error, and no string of the result
 * can run as script.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { contentSecurityPolicy, loadHtmlAssets, renderHtml, writeReports, type HtmlAssets } from '../../src/report/index.js'
import { jsonForScriptElement } from '../../src/report/html.js'
import { comparisonBarCharts, comparisonOverTimeCharts, strategyCharts } from '../../src/report/charts/catalogue.js'
import type { LabResult } from '../../src/result.js'
import { launchChromium, openReport, type Chromium, type PageActivity } from '../helpers/chromium.js'
import { compareFixture, kneeFixture, runAt, runFixture } from '../fixtures.js'

interface CanvasInk {
  id: string
  kind: string
  width: number
  height: number
  /** Pixels with any opacity. */
  inkPixels: number
  /** Points or bars Chart.js laid out inside the chart area for values that were measured. */
  measuredElements: number
}

/** Runs in the page (a string: the project compiles without the DOM library). */
const inspectCanvases = `[...document.querySelectorAll('canvas')].map((canvas) => {
  const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height)
  let inkPixels = 0
  for (let alpha = 3; alpha < data.length; alpha += 4) if (data[alpha] !== 0) inkPixels++
  const chart = Chart.getChart(canvas)
  let measuredElements = 0
  if (chart !== undefined) {
    chart.data.datasets.forEach((dataset, index) => {
      const meta = chart.getDatasetMeta(index)
      meta.data.forEach((element, at) => {
        const raw = dataset.data[at]
        const value = raw !== null && typeof raw === 'object' ? raw.y : raw
        if (value !== null && value !== undefined && Number.isFinite(element.x) && Number.isFinite(element.y)) measuredElements++
      })
    })
  }
  return { id: canvas.id, kind: canvas.dataset.chart, width: canvas.width, height: canvas.height, inkPixels, measuredElements }
})`

const pageText = `({
  title: document.title,
  h1: document.querySelector('h1').textContent,
  h2: [...document.querySelectorAll('h2')].map((heading) => heading.textContent),
  drawn: Number(document.body.dataset.chartsDrawn),
  failed: Number(document.body.dataset.chartsFailed),
  labelled: [...document.querySelectorAll('canvas')].every((canvas) => canvas.getAttribute('role') === 'img' && canvas.getAttribute('aria-label').length > 20),
  notMeasured: [...document.querySelectorAll('.not-measured')].map((note) => note.textContent),
})`

interface PageText {
  title: string
  h1: string
  h2: string[]
  drawn: number
  failed: number
  labelled: boolean
  notMeasured: string[]
}

describe('HTML report in headless Chromium', () => {
  let browser: Chromium
  let assets: HtmlAssets
  let folder: string
  let pages = 0

  before(async () => {
    assets = await loadHtmlAssets()
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-report-html-'))
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    if (folder !== undefined) fs.rmSync(folder, { recursive: true, force: true })
  })

  async function open (result: LabResult): Promise<{ activity: PageActivity, text: PageText, canvases: CanvasInk[] }> {
    const file = path.join(folder, `report-${pages++}.html`)
    fs.writeFileSync(file, renderHtml(result, assets))
    const activity = await openReport(browser, file)
    const text = await activity.page.evaluate(pageText) as PageText
    const canvases = await activity.page.evaluate(inspectCanvases) as CanvasInk[]
    await activity.page.close()
    return { activity, text, canvases }
  }

  function assertCleanLoad (activity: PageActivity): void {
    assert.deepEqual(activity.pageErrors, [], 'uncaught errors in the page')
    assert.deepEqual(activity.consoleErrors, [], 'console errors (a blocked request would show here too)')
    assert.deepEqual(activity.requests, [activity.url], 'no request but the page itself')
    assert.deepEqual(activity.dialogs, [])
  }

  function assertEveryChartDrawn (canvases: CanvasInk[], text: PageText, expected: number): void {
    assert.equal(canvases.length, expected, 'charts in the page')
    assert.equal(text.drawn, expected, 'charts the page says it drew')
    assert.equal(text.failed, 0)
    assert.ok(text.labelled, 'every chart has role=img and an accessible label')
    for (const canvas of canvases) {
      assert.ok(canvas.width > 200 && canvas.height > 200, `${canvas.id} is ${canvas.width}×${canvas.height}`)
      // Axes and labels alone are a few thousand pixels; the threshold only rules out a blank canvas.
      assert.ok(canvas.inkPixels > 2000, `${canvas.id} has only ${canvas.inkPixels} drawn pixels`)
      assert.ok(canvas.measuredElements > 0, `${canvas.id} laid out no measured point or bar`)
    }
  }

  it('renders a run: tables, 2 charts over time and 5 server signals', async () => {
    const result = runFixture()
    const { activity, text, canvases } = await open(result)
    assertCleanLoad(activity)
    assert.equal(text.title, 'tollbooth lab run: auth-mix')
    assert.deepEqual(text.h2, ['Requests', 'Over time', 'Server signals'])
    assertEveryChartDrawn(canvases, text, 7)
    assert.deepEqual(canvases.map((canvas) => canvas.kind), ['latency', 'throughput', 'server-cpu', 'server-event-loop', 'server-libuv', 'server-hash-queue', 'server-rss'])
  })

  it('renders a knee search: the knee charts first, and leaves out what was not measured', async () => {
    const result = kneeFixture()
    const { activity, text, canvases } = await open(result)
    assertCleanLoad(activity)
    assert.deepEqual(text.h2, ['Knee search', 'Requests', 'Over time', 'Server signals', 'The articles'])
    // The libuv strategy has no hash queue of its own: 2 knee + 2 over time + 4 server signals.
    assertEveryChartDrawn(canvases, text, 8)
    assert.deepEqual(canvases.slice(0, 2).map((canvas) => canvas.kind), ['knee-latency', 'knee-throughput'])
    assert.deepEqual(text.notMeasured, ['Not measured, so not drawn: Hash queue.'])
  })

  it('renders a comparison: 7 bar charts, 7 charts of every strategy over time, 2 per strategy', async () => {
    const result = compareFixture()
    const { activity, text, canvases } = await open(result)
    assertCleanLoad(activity)
    assert.deepEqual(text.h2, ['Comparison', 'Strategies side by side', 'Every strategy over time', 'Each strategy over time', 'Services'])
    assertEveryChartDrawn(canvases, text, 7 + 7 + 2 * result.runs.length)
    const planned = [comparisonBarCharts(result), comparisonOverTimeCharts(result), ...strategyCharts(result)].flatMap((group) => group.panels.map((panel) => panel.id))
    assert.deepEqual(canvases.map((canvas) => canvas.id), planned)
  })

  it('draws only the charts with data when the service said nothing about itself', async () => {
    const result = runFixture()
    const run = runAt(result, 0)
    run.server = []
    const { activity, text, canvases } = await open(result)
    assertCleanLoad(activity)
    assertEveryChartDrawn(canvases, text, 2)
    assert.deepEqual(text.notMeasured, ['Not measured, so not drawn: CPU of the service, Event-loop delay, libuv pool canary, Hash queue, Memory (RSS).'])
  })

  it('shows a hostile scenario name as text: it neither runs nor breaks the page', async () => {
    const hostile = '</script><script>alert(1)</script><!--'
    const result = compareFixture()
    result.scenario.name = hostile
    result.scenario.description = `${hostile} \u2028 & <b>bold</b>`
    result.warnings.push(hostile)
    const run = runAt(result, 0)
    run.label = `<img src=x onerror=alert(2)>${hostile}`
    run.service.settings.EVIL = hostile
    const html = renderHtml(result, assets)
    assert.ok(!html.includes('<script>alert'), 'the raw string never reaches the HTML')
    const { activity, text, canvases } = await open(result)
    assertCleanLoad(activity)
    assert.equal(text.title, `tollbooth lab compare: ${hostile}`)
    assert.equal(text.h1, `tollbooth lab compare · ${hostile}`)
    assertEveryChartDrawn(canvases, text, 7 + 7 + 2 * result.runs.length)
  })
})

describe('HTML report, as text', () => {
  it('is self-contained: a strict CSP, and nothing that loads from elsewhere', async () => {
    const html = renderHtml(compareFixture(), await loadHtmlAssets())
    assert.ok(html.includes(`<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy}">`))
    assert.equal(contentSecurityPolicy, "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:")
    assert.doesNotMatch(html, /<(link|img|iframe|object|embed)\b/i)
    assert.doesNotMatch(html, /\s(src|href)=/i)
    assert.doesNotMatch(html, /@import|@font-face|sourceMappingURL/)
  })

  it('embeds the result as JSON that no string can break out of, and that parses back to the same', () => {
    const value = { name: '</script><!-- & \u2028\u2029 >' }
    const embedded = jsonForScriptElement(value)
    assert.doesNotMatch(embedded, /[<>&\u2028\u2029]/)
    assert.deepEqual(JSON.parse(embedded), value)
  })

  it('embeds the whole result, unchanged', async () => {
    const result = kneeFixture()
    const html = renderHtml(result, await loadHtmlAssets())
    const match = /<script type="application\/json" id="lab-result">(.*?)<\/script>/s.exec(html)
    assert.ok(match?.[1] !== undefined)
    assert.deepEqual(JSON.parse(match[1]), result)
  })

  it('writeReports writes result.json, the CSVs and report.html into a new folder', async () => {
    const result = compareFixture()
    const outDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tollbooth-reports-')), 'nested', 'compare')
    try {
      const written = await writeReports(outDir, result)
      assert.deepEqual(written.map((file) => path.relative(outDir, file)),
        ['result.json', 'seconds.csv', 'endpoints.csv', 'server.csv', 'comparison.csv', 'references.csv', 'report.html'])
      assert.deepEqual(JSON.parse(fs.readFileSync(path.join(outDir, 'result.json'), 'utf8')), result)
      assert.match(fs.readFileSync(path.join(outDir, 'report.html'), 'utf8'), /^<!doctype html>/)
    } finally {
      fs.rmSync(path.dirname(path.dirname(outDir)), { recursive: true, force: true })
    }
  })
})
