/**
 * `event-loop`: the hash runs synchronously on the main thread (the `*Sync`
 * functions), as in the Piscina article's baseline. Every other request, health
 * checks included, waits while it runs.
 */
import type { HashReply, HashTask } from '../../hashing/executor.js'
import runOnThisThread from '../../hashing/worker.js'
import { CountingExecutor } from './counting-executor.js'

export class EventLoopExecutor extends CountingExecutor {
  readonly strategy = 'event-loop' as const
  readonly threads = 1

  protected async execute (task: HashTask): Promise<HashReply> {
    return runOnThisThread(task)
  }

  protected async shutdown (): Promise<void> {}
}
