/**
 * `piscina`: a plain Piscina pool with its default options, as in the Piscina
 * article (threads from os.availableParallelism(), an unbounded queue, no
 * deadlines, no admission). The same worker entry as tollbooth's own pool, so
 * only the pool policy differs.
 */
import { Piscina } from 'piscina'
import { errorFields, hashWorkerUrl, type HashFaultLog, type HashReply, type HashTask } from '../../hashing/index.js'
import { CountingExecutor } from './counting-executor.js'

export class PiscinaDefaultExecutor extends CountingExecutor {
  readonly strategy = 'piscina' as const
  private readonly piscina = new Piscina<HashTask, HashReply>({ filename: hashWorkerUrl })

  constructor (log?: HashFaultLog) {
    super(log)
    // A worker that dies fails its own task; without a listener the pool's 'error' would end the process.
    this.piscina.on('error', (err: unknown) => { this.log.warn(errorFields(err), 'a hash worker thread failed') })
  }

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
