/**
 * Just enough of the Prometheus text exposition format to read a service's
 * /metrics: samples with their labels, looked up by name and label subset.
 */

export interface PromSample {
  name: string
  labels: Record<string, string>
  value: number
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$/
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

const unescapeLabel = (value: string): string => value.replace(/\\(["\\n])/g, (_m, c: string) => (c === 'n' ? '\n' : c))
/** "+Inf" and "-Inf" as Number reads "Infinity". */
const parseValue = (text: string): number => Number(text.replace(/Inf$/, 'Infinity'))

export function parsePrometheusText (text: string): PromSample[] {
  const samples: PromSample[] = []
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim()
    if (line === '' || line.startsWith('#')) continue
    const match = sampleLine.exec(line)
    if (match === null) continue
    const labels: Record<string, string> = {}
    for (const pair of (match[3] ?? '').matchAll(labelPair)) labels[pair[1] ?? ''] = unescapeLabel(pair[2] ?? '')
    samples.push({ name: match[1] ?? '', labels, value: parseValue(match[4] ?? 'NaN') })
  }
  return samples
}

export class MetricsSnapshot {
  constructor (readonly samples: readonly PromSample[]) {}

  static parse (text: string): MetricsSnapshot {
    return new MetricsSnapshot(parsePrometheusText(text))
  }

  private matching (name: string, labels: Record<string, string>): PromSample[] {
    return this.samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
  }

  /**
   * The sum of every series of `name` whose labels include `labels`: 0 when the
   * metric is there without such a series (a labelled counter not yet counted),
   * null when the metric is not there at all.
   */
  sum (name: string, labels: Record<string, string> = {}): number | null {
    if (!this.samples.some((sample) => sample.name === name)) return null
    return this.matching(name, labels).reduce((total, sample) => total + sample.value, 0)
  }

  /** The largest value of the matching series; null when there is none. */
  max (name: string, labels: Record<string, string> = {}): number | null {
    const found = this.matching(name, labels)
    return found.length === 0 ? null : Math.max(...found.map((sample) => sample.value))
  }

  /** The labels of the first matching series. */
  labelsOf (name: string): Record<string, string> | null {
    return this.samples.find((sample) => sample.name === name)?.labels ?? null
  }
}
