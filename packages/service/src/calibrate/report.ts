/** The calibration as text for a terminal: a pure function of the collected result. */
import { formatBytes } from '../hashing/index.js'
import type { Calibration } from './calibrate.js'
import { describeParams, envSettingsOf } from './env-settings.js'
import { owaspMinimum } from './minimums.js'

const ms = (value: number): string => `${value.toFixed(1)} ms`

function verdict (c: Calibration): string {
  const off = (c.final.medianMs - c.targetMs) / c.targetMs
  const offText = `${off >= 0 ? '+' : ''}${(off * 100).toFixed(0)} % from the target`
  switch (c.outcome) {
    case 'target':
    case 'closest':
      return Math.abs(off) <= c.tolerance
        ? `within ±${c.tolerance * 100} % of the target (${offText})`
        : `the nearest measured to the target (${offText}): no candidate measured within ±${c.tolerance * 100} %, as the steps between candidates are coarser (bcrypt doubles at each cost) or the measurements varied that much (a busy machine)`
    case 'minimum-too-slow': return `SLOWER than the target (${offText}) at OWASP's minimum (${describeParams(owaspMinimum(c.algorithm))}): the target cannot be met on this machine without going below it, so these are the minimum. Fewer threads do not make a hash faster; a faster CPU, or a longer target, does`
    case 'maximum-too-fast': return `faster than the target (${offText}) with the most memory and passes allowed: these are the dearest parameters that fit the budget and the bounds on hashes`
  }
}

export function renderCalibration (c: Calibration, written: string | undefined): string {
  const lines: string[] = []
  const { machine } = c
  lines.push(`tollbooth calibrate: ${c.algorithm}, target ${c.targetMs} ms a hash with all ${c.threads} hash thread${c.threads === 1 ? '' : 's'} busy at once`)
  lines.push(`machine: ${machine.cpuModel}, ${machine.cores} cores, CPU budget ${machine.cpuBudget.cpus} (${machine.cpuBudget.source}), Node ${machine.node}, ${machine.platform}`)
  if (machine.loadAverage > machine.cores / 2) {
    lines.push(`WARNING: the machine was busy before measuring (load average ${machine.loadAverage.toFixed(1)} on ${machine.cores} cores): other work slowed every measurement, so these parameters are cheaper than the target on a quiet machine. Run it again with nothing else busy.`)
  }
  lines.push(`memory budget: ${formatBytes(c.memoryBudget.bytes)} (${c.memoryBudget.origin}): at most ${formatBytes(c.memoryBudget.perHashBytes)} a hash`)
  lines.push('')
  lines.push('measured in the search (median verify, all threads busy):')
  for (const m of c.measurements) lines.push(`  ${describeParams(m.hash).padEnd(22)} ${ms(m.ms).padStart(10)}${m.kind === 'confirm' ? '  (measured again, longer)' : ''}`)
  lines.push('')
  lines.push('Set:')
  for (const [name, value] of Object.entries(envSettingsOf(c.chosen))) lines.push(`  ${name}=${value}`)
  lines.push('')
  lines.push(`all-threads time per hash: ${ms(c.final.medianMs)} (median of ${c.final.verifies} verifies, ${c.threads} threads busy): ${verdict(c)}`)
  lines.push(`logins/s per core: ${(c.final.verifiesPerSecond / c.threads).toFixed(1)} (${c.final.verifiesPerSecond.toFixed(1)} a second over ${c.threads} hash thread${c.threads === 1 ? '' : 's'}, one a core)`)
  lines.push(`memory at full concurrency: ${c.threads} × ${formatBytes(c.fullConcurrencyBytes / c.threads)} = ${formatBytes(c.fullConcurrencyBytes)} of the ${formatBytes(c.memoryBudget.bytes)} budget (the process's peak resident set while measuring: ${formatBytes(c.final.peakRssBytes)})`)
  lines.push('')
  lines.push(written === undefined
    ? 'Set these in the service\'s environment, or run again with --write to keep them in the data folder for `npm start` / `tollbooth serve`.'
    : `Written to ${written}: \`npm start\` and \`tollbooth serve\` with this data folder use them, unless the environment or a flag sets them.`)
  return lines.join('\n') + '\n'
}
