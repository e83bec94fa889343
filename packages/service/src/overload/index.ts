/**
 * Overload control's face: admission at the door (hash-admission.ts), paced refusals
 * (pacing.ts), shedding of every API route past capacity (shedding.ts, in-flight-gate.ts), the
 * drain before a shutdown (drain.ts), and the request events they all follow (request-events.ts).
 */
export { admittedTicket, connectionKeys, hashAdmission, type HashAdmissionOptions } from './hash-admission.js'
export { RefusalPacer } from './pacing.js'
export { createShedding, shedReasons, type SheddingOptions, type ShedReason } from './shedding.js'
export { installDrain, type Drain } from './drain.js'
export { requestReceivedAt } from './request-events.js'
