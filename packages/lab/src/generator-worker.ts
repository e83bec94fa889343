/**
 * The worker-thread entry of a load-generator shard: loads the scenario (by
 * name or file), then runs the segments the main thread sends.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { LoadGenerator, type GeneratorCommand, type GeneratorMessage, type GeneratorOptions } from './generator.js'
import { loadScenario } from './scenarios/index.js'

const port = parentPort
if (port === null) throw new Error('generator-worker.js runs as a worker thread')
const options = workerData as GeneratorOptions
const emit = (message: GeneratorMessage): void => { port.postMessage(message) }

try {
  const scenario = await loadScenario(options.scenario)
  const generator = new LoadGenerator(options, scenario, emit)
  let work: Promise<void> = Promise.resolve()
  port.on('message', (command: GeneratorCommand) => {
    if (command.type === 'segment') {
      work = work.then(async () => { await generator.runSegment(command.segment) }).catch((err: unknown) => {
        emit({ type: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) })
      })
    } else {
      if (command.abort) generator.stop(true)
      void work.then(async () => {
        await generator.close()
        emit({ type: 'closed' })
        port.close()
      })
    }
  })
  emit({ type: 'ready' })
} catch (err) {
  emit({ type: 'failed', message: err instanceof Error ? err.message : String(err) })
}
