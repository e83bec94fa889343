/** Chart.js configuration shared by every chart; runs in Node (catalogue.ts, to plan the charts) and in the page (page.ts). */
import type { Chart, ChartConfiguration, ChartDataset, ChartOptions, ChartType, Plugin, Scale, ScaleOptions } from 'chart.js'
import { formatDecimal, groupDigits } from '../format.js'

/** One point of a line over time or rate; y null leaves a gap (unmeasured is not zero). */
export interface XY { x: number, y: number | null }

export type LineConfig = ChartConfiguration<'line', XY[]>
export type BarConfig = ChartConfiguration<'bar', Array<number | null>>
export type AnyChartConfig = LineConfig | BarConfig

/** A dashed line across the chart at a value of one axis, with a label (the knee, a CPU budget, a limit). */
export interface ReferenceLine {
  axis: 'x' | 'y'
  value: number
  label: string
  colour: string
}

/** Okabe-Ito colours (distinguishable with colour blindness), one per strategy in run order. */
const seriesColours = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#8c6d1f', '#555555']

export function seriesColour (index: number): string {
  return seriesColours[index % seriesColours.length] ?? '#555555'
}

export const colours = {
  p50: '#0072b2',
  p95: '#e69f00',
  p99: '#d55e00',
  healthz: '#009e73',
  floor: '#999999',
  offered: '#777777',
  achieved: '#0072b2',
  failed: '#d55e00',
  dropped: '#cc79a7',
  vus: '#009e73',
  limit: '#b00020',
} as const

export function lineDataset (label: string, points: XY[], colour: string, style: { dashed?: boolean, rightAxis?: boolean } = {}): ChartDataset<'line', XY[]> {
  return {
    label,
    data: points,
    borderColor: colour,
    backgroundColor: colour,
    borderWidth: 2,
    borderDash: style.dashed === true ? [6, 4] : [],
    pointRadius: 0,
    pointHoverRadius: 3,
    tension: 0,
    spanGaps: false,
    yAxisID: style.rightAxis === true ? 'y2' : 'y',
  }
}

export function barDataset (label: string, values: Array<number | null>, colour: string | string[]): ChartDataset<'bar', Array<number | null>> {
  return { label, data: values, backgroundColor: colour, borderColor: colour, borderWidth: 0, maxBarThickness: 48 }
}

const valueOf = (point: XY | number | null | undefined): number | null => (typeof point === 'object' && point !== null ? point.y : point ?? null)

/** Every finite number of the datasets. */
function chartValues (datasets: ReadonlyArray<{ data: ReadonlyArray<XY | number | null> }>): number[] {
  return datasets.flatMap((dataset) => dataset.data.map(valueOf).filter((value): value is number => value !== null && Number.isFinite(value)))
}

/** Whether the chart would draw anything measured (else the report says "not measured" instead). */
export function hasData (config: AnyChartConfig): boolean {
  return chartValues(config.data.datasets).length > 0
}

export interface AxisSpec {
  title: string
  /** For tooltips: "ms", "cores" ... */
  unit: string
  /** Stretch the axis to show this value (a CPU budget above every sample). */
  suggestedMax?: number
  stacked?: boolean
  /** Linear axes start at zero unless this is false (achieved against offered). */
  fromZero?: boolean
  /** Never logarithmic: counts and rates, where a log scale would hide what matters. */
  linear?: boolean
  /** A second, linear axis on the right (virtual users). */
  rightTitle?: string
}

/** Logarithmic when the positive values span more than two orders of magnitude (30 s beside 5 ms). */
function valueAxis (axis: AxisSpec, values: number[]): ScaleOptions<'linear' | 'logarithmic'> {
  const positive = values.filter((value) => value > 0)
  const log = axis.linear !== true && axis.stacked !== true && positive.length >= 2 && Math.max(...positive) / Math.min(...positive) > 100
  // A log axis starts at the power of ten below the smallest value, so the smallest bar still shows.
  const min = log ? 10 ** Math.floor(Math.log10(Math.min(...positive))) : undefined
  return {
    type: log ? 'logarithmic' : 'linear',
    stacked: axis.stacked === true,
    beginAtZero: !log && axis.fromZero !== false,
    ...(min === undefined ? {} : { min }),
    ...(axis.suggestedMax === undefined ? {} : { suggestedMax: axis.suggestedMax }),
    title: { display: true, text: log ? `${axis.title} (log scale)` : axis.title },
    ticks: { callback: (tick: number | string) => tickLabel(Number(tick), log) },
    grid: { color: '#e6e6e6' },
  }
}

/** A tick label: on a log scale only 1, 2 and 5 times a power of ten, so labels never crowd. */
function tickLabel (value: number, log: boolean): string {
  if (log && (value <= 0 || ![1, 2, 5].includes(Math.round(value / 10 ** Math.floor(Math.log10(value)))))) return ''
  return Math.abs(value) >= 1000 ? groupDigits(value) : String(Number(value.toPrecision(3)))
}

/** Draws each reference line after the datasets, with its label at the line's end. */
function referenceLinesPlugin<Type extends ChartType> (lines: ReferenceLine[]): Plugin<Type> {
  return {
    id: 'referenceLines',
    afterDatasetsDraw (chart: Chart<Type>) {
      const { ctx, chartArea: area } = chart
      for (const line of lines) {
        const scale: Scale | undefined = chart.scales[line.axis]
        if (scale === undefined) continue
        const pixel = scale.getPixelForValue(line.value)
        const vertical = line.axis === 'x'
        if (vertical ? pixel < area.left || pixel > area.right : pixel < area.top || pixel > area.bottom) continue
        ctx.save()
        ctx.strokeStyle = line.colour
        ctx.lineWidth = 1.5
        ctx.setLineDash([5, 4])
        ctx.beginPath()
        ctx.moveTo(vertical ? pixel : area.left, vertical ? area.top : pixel)
        ctx.lineTo(vertical ? pixel : area.right, vertical ? area.bottom : pixel)
        ctx.stroke()
        ctx.setLineDash([])
        ctx.font = '600 12px system-ui, sans-serif'
        const width = ctx.measureText(line.label).width
        const flip = !vertical || pixel > area.left + (area.right - area.left) * 0.7
        const textX = vertical ? pixel + (flip ? -6 : 6) : area.right - 6
        const textY = vertical ? area.top + 14 : pixel - 6
        // A light box under the label keeps it readable where it crosses a line.
        ctx.fillStyle = 'rgba(255, 255, 255, 0.85)'
        ctx.fillRect((flip ? textX - width : textX) - 3, textY - 12, width + 6, 16)
        ctx.fillStyle = line.colour
        ctx.textAlign = flip ? 'right' : 'left'
        ctx.fillText(line.label, textX, textY)
        ctx.restore()
      }
    },
  }
}

/** Bar charts: writes "not measured" where a category has no value in any dataset (a gap, not a zero). */
const notMeasuredPlugin: Plugin<'bar'> = {
  id: 'notMeasured',
  afterDatasetsDraw (chart: Chart<'bar'>) {
    const { ctx, chartArea } = chart
    const scale: Scale | undefined = chart.scales.x
    if (scale === undefined) return
    ctx.save()
    ctx.font = 'italic 11px system-ui, sans-serif'
    ctx.fillStyle = '#59636e'
    ctx.textAlign = 'left'
    ctx.textBaseline = 'middle'
    for (const [index] of (chart.data.labels ?? []).entries()) {
      if (!chart.data.datasets.every((dataset) => dataset.data[index] == null)) continue
      // Upright along the empty column, so it fits however narrow the chart is.
      ctx.save()
      ctx.translate(scale.getPixelForValue(index), chartArea.bottom - 6)
      ctx.rotate(-Math.PI / 2)
      ctx.fillText('not measured', 0, 0)
      ctx.restore()
    }
    ctx.restore()
  },
}

/** Options every chart shares; the literal type lets each chart type check it against its own options. */
function baseOptions (unit: string) {
  return {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    interaction: { mode: 'nearest', axis: 'x', intersect: false },
    plugins: {
      legend: { position: 'bottom', labels: { boxWidth: 14, boxHeight: 2, padding: 10 } },
      // "label: 1,520 ms"; a null point shows a dash.
      tooltip: {
        callbacks: {
          label: (item: { raw: unknown, dataset: { label?: string } }) => {
            const value = valueOf(item.raw as XY | number | null)
            return `${item.dataset.label ?? ''}: ${value === null ? '—' : formatDecimal(value)}${unit === '' ? '' : ` ${unit}`}`
          },
        },
      },
    },
  } as const
}

/** A line chart of numeric x (seconds, offered rate); series on the right axis do not set the left one's scale. */
export function lineChartConfig (datasets: Array<ChartDataset<'line', XY[]>>, x: { title: string, fromZero: boolean }, axis: AxisSpec, lines: ReferenceLine[] = []): LineConfig {
  const scales: ChartOptions<'line'>['scales'] & object = {
    x: { type: 'linear', ...(x.fromZero ? { min: 0 } : {}), title: { display: true, text: x.title }, grid: { color: '#eeeeee' } },
    y: valueAxis(axis, chartValues(datasets.filter((dataset) => dataset.yAxisID !== 'y2'))),
  }
  if (axis.rightTitle !== undefined) {
    scales.y2 = { type: 'linear', position: 'right', beginAtZero: true, title: { display: true, text: axis.rightTitle }, grid: { drawOnChartArea: false } }
  }
  return { type: 'line', data: { datasets }, options: { ...baseOptions(axis.unit), scales }, plugins: [referenceLinesPlugin<'line'>(lines)] }
}

/** Bars by category (strategies in the order they ran). */
export function barChartConfig (labels: string[], datasets: Array<ChartDataset<'bar', Array<number | null>>>, axis: AxisSpec, lines: ReferenceLine[] = []): BarConfig {
  const options = baseOptions(axis.unit)
  return {
    type: 'bar',
    data: { labels, datasets },
    options: {
      ...options,
      interaction: { mode: 'index', intersect: false },
      plugins: { ...options.plugins, legend: { display: datasets.length > 1, position: 'bottom', labels: { boxWidth: 14 } } },
      scales: { x: { stacked: axis.stacked === true, grid: { display: false } }, y: valueAxis(axis, chartValues(datasets)) },
    },
    plugins: [referenceLinesPlugin<'bar'>(lines), notMeasuredPlugin],
  }
}
