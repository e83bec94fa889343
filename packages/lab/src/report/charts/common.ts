/**
 * Chart.js configuration helpers shared by every chart. The chart modules run in Node (which
 * charts have data: charts/plan.ts) and in the page (charts/page.ts, compiled on its own).
 */
import type { Chart, ChartConfiguration, ChartDataset, ChartOptions, ChartType, Plugin, Scale, ScaleOptions, TooltipItem } from 'chart.js'
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

const namedColours = {
  p50: '#0072b2',
  p95: '#e69f00',
  p99: '#d55e00',
  healthz: '#009e73',
  offered: '#777777',
  achieved: '#0072b2',
  failed: '#d55e00',
  dropped: '#cc79a7',
  vus: '#009e73',
  limit: '#b00020',
} as const

export function namedColour (name: keyof typeof namedColours): string {
  return namedColours[name]
}

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

/** Every finite number of the chart's datasets. */
export function chartValues (config: AnyChartConfig): number[] {
  const values: number[] = []
  for (const dataset of config.data.datasets) {
    for (const point of dataset.data as Array<XY | number | null>) {
      const value = typeof point === 'number' || point === null ? point : point.y
      if (value !== null && Number.isFinite(value)) values.push(value)
    }
  }
  return values
}

/** Whether the chart would draw anything measured (else the report says "not measured" instead). */
export function hasData (config: AnyChartConfig): boolean {
  return chartValues(config).length > 0
}

/** Logarithmic when the positive values span more than two orders of magnitude (30 s beside 5 ms). */
export function valueScaleType (values: number[]): 'linear' | 'logarithmic' {
  const positive = values.filter((value) => value > 0)
  if (positive.length < 2) return 'linear'
  return Math.max(...positive) / Math.min(...positive) > 100 ? 'logarithmic' : 'linear'
}

/** A tick label: on a log scale only 1, 2 and 5 times a power of ten, so labels never crowd. */
export function tickLabel (value: number, logarithmic: boolean): string {
  if (logarithmic) {
    if (value <= 0) return ''
    const mantissa = Math.round(value / 10 ** Math.floor(Math.log10(value)))
    if (![1, 2, 5].includes(mantissa)) return ''
  }
  return Math.abs(value) >= 1000 ? groupDigits(value) : String(Number(value.toPrecision(3)))
}

/** A log axis starts at the power of ten below the smallest value, so the smallest bar still shows. */
export function logAxisMin (values: number[]): number | undefined {
  const positive = values.filter((value) => value > 0)
  return positive.length === 0 ? undefined : 10 ** Math.floor(Math.log10(Math.min(...positive)))
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

export function valueAxis (axis: AxisSpec, values: number[]): ScaleOptions<'linear' | 'logarithmic'> {
  const type = axis.linear === true || axis.stacked === true ? 'linear' : valueScaleType(values)
  const min = type === 'logarithmic' ? logAxisMin(values) : undefined
  return {
    type,
    stacked: axis.stacked === true,
    beginAtZero: type === 'linear' && axis.fromZero !== false,
    ...(min === undefined ? {} : { min }),
    ...(axis.suggestedMax === undefined ? {} : { suggestedMax: axis.suggestedMax }),
    title: { display: true, text: type === 'logarithmic' ? `${axis.title} (log scale)` : axis.title },
    ticks: { callback: (value: number | string) => tickLabel(Number(value), type === 'logarithmic') },
    grid: { color: '#e6e6e6' },
  }
}

/** Draws each reference line after the datasets, with its label at the line's end. */
export function referenceLinesPlugin<Type extends ChartType> (lines: ReferenceLine[]): Plugin<Type> {
  return {
    id: 'referenceLines',
    afterDatasetsDraw (chart: Chart<Type>) {
      const { ctx, chartArea } = chart
      for (const line of lines) {
        const scale: Scale | undefined = chart.scales[line.axis]
        if (scale === undefined) continue
        const pixel = scale.getPixelForValue(line.value)
        const inside = line.axis === 'x' ? pixel >= chartArea.left && pixel <= chartArea.right : pixel >= chartArea.top && pixel <= chartArea.bottom
        if (!inside) continue
        ctx.save()
        ctx.strokeStyle = line.colour
        ctx.lineWidth = 1.5
        ctx.setLineDash([5, 4])
        ctx.beginPath()
        if (line.axis === 'x') {
          ctx.moveTo(pixel, chartArea.top)
          ctx.lineTo(pixel, chartArea.bottom)
        } else {
          ctx.moveTo(chartArea.left, pixel)
          ctx.lineTo(chartArea.right, pixel)
        }
        ctx.stroke()
        ctx.setLineDash([])
        ctx.font = '600 12px system-ui, sans-serif'
        const width = ctx.measureText(line.label).width
        const flip = line.axis === 'y' || pixel > chartArea.left + (chartArea.right - chartArea.left) * 0.7
        const textX = line.axis === 'x' ? pixel + (flip ? -6 : 6) : chartArea.right - 6
        const textY = line.axis === 'x' ? chartArea.top + 14 : pixel - 6
        const left = flip ? textX - width : textX
        // A light box under the label keeps it readable where it crosses a line.
        ctx.fillStyle = 'rgba(255, 255, 255, 0.85)'
        ctx.fillRect(left - 3, textY - 12, width + 6, 16)
        ctx.fillStyle = line.colour
        ctx.textAlign = flip ? 'right' : 'left'
        ctx.fillText(line.label, textX, textY)
        ctx.restore()
      }
    },
  }
}

/** Bar charts: writes "not measured" where a category has no value in any dataset (a gap, not a zero). */
export function notMeasuredPlugin (): Plugin<'bar'> {
  return {
    id: 'notMeasured',
    afterDatasetsDraw (chart: Chart<'bar'>) {
      const { ctx, chartArea } = chart
      const scale: Scale | undefined = chart.scales.x
      const labels = chart.data.labels ?? []
      if (scale === undefined) return
      ctx.save()
      ctx.font = 'italic 11px system-ui, sans-serif'
      ctx.fillStyle = '#59636e'
      ctx.textAlign = 'left'
      ctx.textBaseline = 'middle'
      labels.forEach((_, index) => {
        const missing = chart.data.datasets.every((dataset) => {
          const value = dataset.data[index]
          return value === null || value === undefined
        })
        if (!missing) return
        // Upright along the empty column, so it fits however narrow the chart is.
        ctx.save()
        ctx.translate(scale.getPixelForValue(index), chartArea.bottom - 6)
        ctx.rotate(-Math.PI / 2)
        ctx.fillText('not measured', 0, 0)
        ctx.restore()
      })
      ctx.restore()
    },
  }
}

/** "label: 1,520 ms" tooltips; null points show no tooltip line. */
export function tooltipLabel (unit: string): (item: TooltipItem<ChartType>) => string {
  return (item) => {
    const raw = item.raw as XY | number | null
    const value = typeof raw === 'number' || raw === null ? raw : raw.y
    return `${item.dataset.label ?? ''}: ${value === null ? '—' : formatDecimal(value)}${unit === '' ? '' : ` ${unit}`}`
  }
}

/** Options every chart shares; the literal type lets each chart type check it against its own options. */
export function baseOptions (unit: string) {
  return {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    interaction: { mode: 'nearest', axis: 'x', intersect: false },
    plugins: {
      legend: { position: 'bottom', labels: { boxWidth: 14, boxHeight: 2, padding: 10 } },
      tooltip: { callbacks: { label: tooltipLabel(unit) } },
    },
  } as const
}

/** A line chart of numeric x (seconds, offered rate); series on the right axis do not set the left one's scale. */
export function lineChartConfig (datasets: Array<ChartDataset<'line', XY[]>>, x: { title: string, fromZero: boolean }, axis: AxisSpec, lines: ReferenceLine[] = []): LineConfig {
  const values = chartValues({ type: 'line', data: { datasets: datasets.filter((dataset) => dataset.yAxisID !== 'y2') } })
  const scales: ChartOptions<'line'>['scales'] & object = {
    x: { type: 'linear', ...(x.fromZero ? { min: 0 } : {}), title: { display: true, text: x.title }, grid: { color: '#eeeeee' } },
    y: valueAxis(axis, values),
  }
  if (axis.rightTitle !== undefined) {
    scales.y2 = { type: 'linear', position: 'right', beginAtZero: true, title: { display: true, text: axis.rightTitle }, grid: { drawOnChartArea: false } }
  }
  return {
    type: 'line',
    data: { datasets },
    options: { ...baseOptions(axis.unit), scales },
    plugins: [referenceLinesPlugin<'line'>(lines)],
  }
}

/** A line chart over the run: x is seconds since the load started. */
export function timeLineConfig (datasets: Array<ChartDataset<'line', XY[]>>, axis: AxisSpec, lines: ReferenceLine[] = []): LineConfig {
  return lineChartConfig(datasets, { title: 'seconds since the load started', fromZero: true }, axis, lines)
}
