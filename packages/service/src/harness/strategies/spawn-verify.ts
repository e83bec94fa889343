/**
 * The child-process entry of the `spawn` strategy (the NestJS article's "native
 * script"): read one task as JSON on stdin, run it, write the reply on stdout, exit.
 */
import type { HashTask } from '../../hashing/executor.js'
import run from '../../hashing/worker.js'

const chunks: Buffer[] = []
process.stdin.on('data', (chunk: Buffer) => chunks.push(chunk))
process.stdin.on('end', () => {
  const task = JSON.parse(Buffer.concat(chunks).toString('utf8')) as HashTask
  process.stdout.write(JSON.stringify(run(task)))
})
