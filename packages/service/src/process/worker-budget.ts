/**
 * How `serve --workers N` shares one CPU budget: each worker's hash pool gets max(1, floor(budget
 * / N)) threads, so N processes hash on no more threads than the budget has; the remainder is left
 * to the event loops and PostgreSQL. More workers than the budget still get one thread each
 * (oversubscribed, logged as a warning).
 */

export interface WorkerBudget {
  /** Worker processes to fork. */
  workers: number
  /** Hash threads in each worker's pool. */
  threadsPerWorker: number
  /** The CPU budget the split was made from. */
  budget: number
  /** CPUs of the budget no hash thread is sized to (budget - workers x threads), 0 when oversubscribed. */
  unusedCpus: number
  /** More hash threads in all than the budget (workers > budget). */
  oversubscribed: boolean
}

/** `requested` 0 means one worker per CPU of the budget. */
export function splitCpuBudget (budget: number, requested: number): WorkerBudget {
  const cpus = Math.max(1, Math.floor(budget))
  const workers = requested === 0 ? cpus : requested
  const threadsPerWorker = Math.max(1, Math.floor(cpus / workers))
  const total = threadsPerWorker * workers
  return { workers, threadsPerWorker, budget: cpus, unusedCpus: Math.max(0, cpus - total), oversubscribed: total > cpus }
}
