/**
 * `event-loop`: the hash runs synchronously on the main thread (the `*Sync`
 * functions), as in the Piscina article's baseline. Every other request, health
 * checks included, waits while it runs.
 */
import { runHashTask, type HashReply, type HashTask } from '../../hashing/index.js'
import { CountingExecutor } from './counting-executor.js'

export class EventLoopExecutor extends CountingExecutor {
  readonly strategy = 'event-loop' as const
  readonly threads = 1

  protected async execute (task: HashTask): Promise<HashReply> {
    return runHashTask(task)
  }

  protected async shutdown (): Promise<void> {}
}
