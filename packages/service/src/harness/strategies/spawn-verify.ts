/**
 * The child-process entry of the `spawn` strategy (the NestJS article's "native
 * script"): read one task as JSON on stdin, run it, write the reply on stdout, exit.
 */
import { runHashTask, type HashTask } from '../../hashing/index.js'

const chunks: Buffer[] = []
process.stdin.on('data', (chunk: Buffer) => chunks.push(chunk))
process.stdin.on('end', () => {
  const task = JSON.parse(Buffer.concat(chunks).toString('utf8')) as HashTask
  process.stdout.write(JSON.stringify(runHashTask(task)))
})
