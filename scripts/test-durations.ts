/**
 * A node:test reporter that prints, at the end of a run, how long each test file
 * took (the sum of its top-level tests) and the slowest tests: where the suite's
 * time goes. scripts/run-tests.ts adds it beside the spec reporter. With
 * TOLLBOOTH_TEST_DURATIONS_OUT set, it also writes the per-file seconds there as
 * JSON ({ "service/server/login.test": 3.2, ... }: a file's package and path under its
 * test/, the keys of run-tests.ts): the next run starts the slowest first. With
 * TOLLBOOTH_TEST_FAILURES_OUT set, it writes each failed test and the head of its error
 * there, which run-tests.ts repeats at the very end of its output: a log cut to its tail
 * (CI's) still says why a test failed, not only which.
 */
import fs from 'node:fs'
interface TestEventData {
  name: string
  nesting: number
  file?: string
  details?: { duration_ms?: number, error?: unknown }
}

interface TestEvent {
  type: string
  data: TestEventData
}

const slowestShown = 10
/** Lines of a failure's error kept for the summary. */
const failureLines = 12

/** packages/<name>/dist/test/<path>.js -> <name>/<path> (as run-tests.ts keys its files). */
function keyOf (file: string): string {
  const match = /packages[\\/]([^\\/]+)[\\/]dist[\\/]test[\\/](.*)\.js$/.exec(file)
  return match === null ? file : `${match[1] ?? ''}/${(match[2] ?? '').split('\\').join('/')}`
}

/** The assertion's message (node wraps it in an ERR_TEST_FAILURE whose cause it is), cut to its head. */
function headOf (error: unknown): string {
  const inner = error instanceof Error && error.cause instanceof Error ? error.cause : error
  const text = inner instanceof Error ? `${inner.name}: ${inner.message}` : String(inner)
  return text.split('\n').slice(0, failureLines).join('\n')
}

function seconds (ms: number): string {
  return `${(ms / 1000).toFixed(2).padStart(7)} s`
}

export default async function * durations (source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const byFile = new Map<string, number>()
  const tests: Array<{ ms: number, name: string }> = []
  const failures: string[] = []
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    const { name, nesting, file, details } = event.data
    const ms = details?.duration_ms ?? 0
    const where = file === undefined ? '?' : keyOf(file)
    if (event.type === 'test:fail') failures.push(`${where}: ${name}\n${headOf(details?.error)}`)
    if (nesting === 0) byFile.set(where, (byFile.get(where) ?? 0) + ms)
    else tests.push({ ms, name: `${where}: ${name}` })
  }
  const failuresOut = process.env.TOLLBOOTH_TEST_FAILURES_OUT
  if (failuresOut !== undefined && failuresOut !== '' && failures.length > 0) fs.writeFileSync(failuresOut, failures.join('\n\n') + '\n')
  if (byFile.size === 0) return
  const out = process.env.TOLLBOOTH_TEST_DURATIONS_OUT
  if (out !== undefined && out !== '') {
    fs.writeFileSync(out, JSON.stringify(Object.fromEntries([...byFile].map(([file, ms]) => [file, Math.round(ms) / 1000])), null, 2) + '\n')
  }
  const files = [...byFile].sort((a, b) => b[1] - a[1])
  yield `\n# durations: ${files.length} file(s)\n`
  for (const [file, ms] of files) yield `# ${seconds(ms)}  ${file}\n`
  yield '# slowest tests\n'
  for (const { ms, name } of tests.sort((a, b) => b.ms - a.ms).slice(0, slowestShown)) yield `# ${seconds(ms)}  ${name}\n`
}
