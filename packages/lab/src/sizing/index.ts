/**
 * `lab sizing` (command.ts): the measurements of one service's knee and overload curve per flow (measure.ts),
 * and the arithmetic that turns them into replicas, headroom and the database's limit (plan.ts).
 */
export { describeHashParameters, labSizing, sizingDeploymentKinds, type SizingOptions } from './command.js'
export { databaseAtPeak, databaseLimits, planReplicas, ratePerCpu, type DatabaseLimit, type ReplicaPlan } from './plan.js'
