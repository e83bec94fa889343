/**
 * The seed articles' hash strategies, each an executor the engine runs its work on in place of
 * tollbooth's pool, for side-by-side measurement in the load lab.
 */
import type { ExecutorFactory } from '../../hashing/index.js'
import { EventLoopExecutor } from './event-loop.js'
import { LibuvExecutor } from './libuv.js'
import { PiscinaDefaultExecutor } from './piscina-default.js'
import { SpawnExecutor } from './spawn.js'

/** What the harness can run: tollbooth's own pool, the seed articles' strategies, and their cluster (one process per CPU, each `piscina`). */
export const seedStrategies = ['tollbooth', 'event-loop', 'libuv', 'libuv-128', 'spawn', 'piscina', 'cluster'] as const
export type SeedStrategy = typeof seedStrategies[number]

/** The executor of one strategy (`cluster`'s processes each run `piscina`). */
export function executorFor (strategy: Exclude<SeedStrategy, 'tollbooth' | 'cluster'>): ExecutorFactory {
  switch (strategy) {
    case 'event-loop': return ({ log }) => new EventLoopExecutor(log)
    case 'libuv':
    case 'libuv-128': return ({ log }) => new LibuvExecutor(strategy, log)
    case 'spawn': return ({ log }) => new SpawnExecutor({ log })
    case 'piscina': return ({ log }) => new PiscinaDefaultExecutor(log)
  }
}
