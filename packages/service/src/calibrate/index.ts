/**
 * `tollbooth calibrate`: the hash parameters that take a target time on this machine with every
 * hash thread busy, within the memory budget and never below OWASP's minimum. The candidates
 * (candidates.ts, minimums.ts), the search apart from the measuring (search.ts), the measuring
 * on the real pool (measure-pool.ts), and the rendering of the result (report.ts).
 */
export { calibrate, type Calibration } from './calibrate.js'
export { describeParams, envSettingsOf } from './env-settings.js'
export { renderCalibration } from './report.js'
