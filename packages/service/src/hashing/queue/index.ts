/** The hash queue's face: the scheduler the pool feeds, and the running mean its admission estimates waits with. */
export { HashScheduler, type QueuePlace, type Refusal, type Ticket } from './scheduler.js'
export { nextMeanRunMs } from './wait-calibration.js'
