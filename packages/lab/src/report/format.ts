/**
 * Number formatting shared by every report, and by the page's chart ticks and tooltips.
 * Unmeasured values (null) show as an em dash; units are left to the column or axis.
 */
type Maybe = number | null | undefined

/** A format that writes an unmeasured (or infinite) value as an em dash. */
const measured = (format: (value: number) => string) => (value: Maybe): string => (value == null || !Number.isFinite(value) ? '—' : format(value))

/** 1234567 -> "1,234,567", whatever the locale. */
export function groupDigits (value: number): string {
  const rounded = Math.round(value)
  return (rounded < 0 ? '-' : '') + String(Math.abs(rounded)).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
}

/** Three significant figures up to 100, then whole numbers with grouped digits: 0.42, 4.21, 42.1, 1,520. */
function decimal (value: number): string {
  const magnitude = Math.abs(value)
  return magnitude === 0 ? '0' : magnitude < 10 ? value.toFixed(2) : magnitude < 100 ? value.toFixed(1) : groupDigits(value)
}

export const formatDecimal = measured(decimal)
/** Milliseconds, written as any decimal is. */
export const formatMs = measured(decimal)

/** A rate per second: 3.5, 62.0, 1,945. */
export const formatRate = measured((perSecond) => (Math.abs(perSecond) < 100 ? perSecond.toFixed(1) : groupDigits(perSecond)))

/** A share (0..1) as a percentage: 0%, 0.04%, 3.4%, 34%. */
export const formatPercent = measured((share) => {
  const percent = share * 100
  const magnitude = Math.abs(percent)
  return `${percent === 0 ? '0' : magnitude < 1 ? percent.toFixed(2) : magnitude < 10 ? percent.toFixed(1) : groupDigits(percent)}%`
})

/** Bytes as mebibytes: 9.5, 180. */
export const formatMiB = measured((bytes) => (Math.abs(bytes / 1048576) < 10 ? (bytes / 1048576).toFixed(1) : groupDigits(bytes / 1048576)))

/** Bytes as gibibytes with the unit, for machine memory: "23.5 GiB". */
export function formatGiB (bytes: number): string {
  return `${(bytes / 1073741824).toFixed(1)} GiB`
}

/** CPU in cores: 0.41, 1.95. */
export const formatCores = measured((cores) => cores.toFixed(2))

/** A whole count: 157,528. */
export const formatCount = measured(groupDigits)

/** A duration with its unit: "850 ms", "30 s", "2 min 30 s". */
export function formatDuration (ms: number): string {
  if (ms < 1000) return `${groupDigits(ms)} ms`
  const seconds = ms / 1000
  if (seconds < 60) return Number.isInteger(seconds) ? `${seconds} s` : `${seconds.toFixed(1)} s`
  const minutes = Math.floor(seconds / 60)
  const rest = Math.round(seconds - minutes * 60)
  return rest === 0 ? `${minutes} min` : `${minutes} min ${rest} s`
}
