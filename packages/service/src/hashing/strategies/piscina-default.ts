/**
 * `piscina`: a plain Piscina pool with its default options, as in the Piscina
 * article (threads from os.availableParallelism(), an unbounded queue, no
 * deadlines, no admission). The same worker entry as tollbooth's own pool, so
 * only the pool policy differs.
 */
import { Piscina } from 'piscina'
import type { HashReply, HashTask } from '../executor.js'
import { CountingExecutor } from './counting-executor.js'

const workerUrl = new URL('../worker.js', import.meta.url).href

export class PiscinaDefaultExecutor extends CountingExecutor {
  readonly strategy = 'piscina' as const
  private readonly piscina = new Piscina<HashTask, HashReply>({ filename: workerUrl })

  get threads (): number {
    return this.piscina.options.maxThreads
  }

  protected async execute (task: HashTask): Promise<HashReply> {
    return await this.piscina.run(task)
  }

  protected async shutdown (): Promise<void> {
    await this.piscina.close()
  }
}
