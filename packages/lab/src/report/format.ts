/**
 * Number formatting shared by every report, and by the page's chart ticks and tooltips.
 * Unmeasured values (null) show as an em dash.
 */

/** 1234567 -> "1,234,567", whatever the locale. */
export function groupDigits (value: number): string {
  const rounded = Math.round(value)
  const sign = rounded < 0 ? '-' : ''
  return sign + String(Math.abs(rounded)).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
}

/** Three significant figures up to 100, then whole numbers with grouped digits. */
export function formatDecimal (value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—'
  const magnitude = Math.abs(value)
  if (magnitude === 0) return '0'
  if (magnitude < 10) return value.toFixed(2)
  if (magnitude < 100) return value.toFixed(1)
  return groupDigits(value)
}

/** Milliseconds, without the unit (the column or axis carries it): 0.42, 4.21, 42.1, 1,520. */
export function formatMs (ms: number | null | undefined): string {
  return formatDecimal(ms)
}

/** A rate per second, without the unit: 3.5, 62.0, 1,945. */
export function formatRate (perSecond: number | null | undefined): string {
  if (perSecond === null || perSecond === undefined || !Number.isFinite(perSecond)) return '—'
  if (Math.abs(perSecond) < 100) return perSecond.toFixed(1)
  return groupDigits(perSecond)
}

/** A share (0..1) as a percentage: 0%, 0.04%, 3.4%, 34%. */
export function formatPercent (share: number | null | undefined): string {
  if (share === null || share === undefined || !Number.isFinite(share)) return '—'
  const percent = share * 100
  if (percent === 0) return '0%'
  if (Math.abs(percent) < 1) return `${percent.toFixed(2)}%`
  if (Math.abs(percent) < 10) return `${percent.toFixed(1)}%`
  return `${groupDigits(percent)}%`
}

/** Bytes as mebibytes, without the unit: 9.5, 180. */
export function formatMiB (bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—'
  const mebibytes = bytes / 1048576
  return Math.abs(mebibytes) < 10 ? mebibytes.toFixed(1) : groupDigits(mebibytes)
}

/** Bytes as gibibytes with the unit, for machine memory: "23.5 GiB". */
export function formatGiB (bytes: number): string {
  return `${(bytes / 1073741824).toFixed(1)} GiB`
}

/** CPU in cores, without the unit: 0.41, 1.95. */
export function formatCores (cores: number | null | undefined): string {
  if (cores === null || cores === undefined || !Number.isFinite(cores)) return '—'
  return cores.toFixed(2)
}

/** A whole count: 157,528. */
export function formatCount (count: number | null | undefined): string {
  if (count === null || count === undefined || !Number.isFinite(count)) return '—'
  return groupDigits(count)
}

/** A duration with its unit: "850 ms", "30 s", "2 min 30 s". */
export function formatDuration (ms: number): string {
  if (ms < 1000) return `${groupDigits(ms)} ms`
  const seconds = ms / 1000
  if (seconds < 60) return Number.isInteger(seconds) ? `${seconds} s` : `${seconds.toFixed(1)} s`
  const minutes = Math.floor(seconds / 60)
  const rest = Math.round(seconds - minutes * 60)
  return rest === 0 ? `${minutes} min` : `${minutes} min ${rest} s`
}
