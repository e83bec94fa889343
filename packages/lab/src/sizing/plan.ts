/**
 * The sizing arithmetic of `lab sizing`: from what one service did on this machine (its knee and
 * the CPU it used there) and what PostgreSQL spent per login, how many replicas of how many CPUs a
 * peak needs with the headroom asked for, and at what peak the one shared database becomes the
 * limit instead. Pure: every figure comes in measured.
 */

export interface ReplicaPlanInputs {
  /** The knee of one service: the highest rate that held (per second). */
  capacityPerSecond: number
  /** The CPU (cores) the service used at the knee: the capacity per CPU is `capacityPerSecond / serviceCpuCores`. */
  serviceCpuCores: number
  /** The peak to serve (per second). */
  peakPerSecond: number
  /** The share of each replica's capacity left unused at the peak, 0 to below 1 (0.3: replicas at 70 % at the peak). */
  headroom: number
  /** Replicas beyond those the peak needs, so that one restarting or lost still leaves the peak served. */
  spareReplicas: number
}

export interface ReplicaPlan {
  cpusPerReplica: number
  /** What one replica of this size serves at its knee, from the rate per CPU measured. */
  replicaCapacityPerSecond: number
  /** Replicas to run: those the peak needs at the headroom, plus the spares. */
  replicas: number
  /** The share of the serving replicas' capacity unused at the peak (spares not counted): at least the headroom asked for. */
  headroomAtPeak: number
}

/** The rate per CPU the service used: capacity ÷ cores, or null when either is unmeasured or zero. */
export function ratePerCpu (capacityPerSecond: number | null, serviceCpuCores: number | null): number | null {
  if (capacityPerSecond === null || serviceCpuCores === null || capacityPerSecond <= 0 || serviceCpuCores <= 0) return null
  return capacityPerSecond / serviceCpuCores
}

/** Replicas of `cpusPerReplica` CPUs each for the peak, keeping `headroom` of each free at it, plus the spares. */
export function planReplicas (inputs: ReplicaPlanInputs, cpusPerReplica: number): ReplicaPlan {
  const { capacityPerSecond, serviceCpuCores, peakPerSecond, headroom, spareReplicas } = inputs
  if (!(headroom >= 0 && headroom < 1)) throw new RangeError(`headroom must be from 0 to below 1, got ${headroom}`)
  const perCpu = ratePerCpu(capacityPerSecond, serviceCpuCores)
  if (perCpu === null || !(cpusPerReplica > 0) || !(peakPerSecond > 0)) throw new RangeError('a replica plan needs a measured capacity, the CPU it used, a peak and a replica size above 0')
  const replicaCapacityPerSecond = perCpu * cpusPerReplica
  // A rounding error must not add a replica: 499.9999 needed at 100 each is 5.
  const serving = Math.max(1, Math.ceil(peakPerSecond / (replicaCapacityPerSecond * (1 - headroom)) - 1e-9))
  return {
    cpusPerReplica,
    replicaCapacityPerSecond,
    replicas: serving + spareReplicas,
    headroomAtPeak: 1 - peakPerSecond / (serving * replicaCapacityPerSecond),
  }
}

/** What PostgreSQL spent per operation (a login, a `GET /me`): measured over steps that held. */
export interface DatabaseCostPerOperation {
  statements: number | null
  walBytes: number
  /** CPU seconds of the PostgreSQL processes per operation; null where they could not be read (a database on another machine). */
  cpuSeconds: number | null
}

export interface DatabaseLimit {
  databaseCpus: number
  /** The peak at which a database of this many CPUs runs at (1 − headroom) of them: past it, the database is the limit, whatever the replicas. */
  limitPerSecond: number
}

/** The peak at which the database is the limit, per database size; null when its CPU per operation is unmeasured. */
export function databaseLimits (cost: DatabaseCostPerOperation, headroom: number, databaseCpus: readonly number[]): DatabaseLimit[] | null {
  if (cost.cpuSeconds === null || cost.cpuSeconds <= 0) return null
  const perCpu = 1 / cost.cpuSeconds
  return databaseCpus.map((cpus) => ({ databaseCpus: cpus, limitPerSecond: cpus * perCpu * (1 - headroom) }))
}

/** The database's load at the peak: statements and WAL per second, and the CPUs it needs at the headroom (null: unmeasured). */
export function databaseAtPeak (cost: DatabaseCostPerOperation, peakPerSecond: number, headroom: number): { statementsPerSecond: number | null, walBytesPerSecond: number, cpus: number | null, cpusNeeded: number | null } {
  const cpus = cost.cpuSeconds === null ? null : peakPerSecond * cost.cpuSeconds
  return {
    statementsPerSecond: cost.statements === null ? null : peakPerSecond * cost.statements,
    walBytesPerSecond: peakPerSecond * cost.walBytes,
    cpus,
    cpusNeeded: cpus === null ? null : Math.ceil(cpus / (1 - headroom) - 1e-9),
  }
}
