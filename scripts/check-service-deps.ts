/**
 * `npm run check:deps` (CI runs it): what a production install of the service package gets,
 * `npm ls --omit=dev --all` in packages/service, must hold none of the lab's dependencies.
 * Exits 1 naming any it finds, 0 with the count of packages otherwise.
 */
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The lab's (and its tests') packages: none belongs in the service's production tree. */
export const labOnly = ['chart.js', 'hdr-histogram-js', 'playwright-core', 'undici', '@tollbooth/lab']

interface Tree { dependencies?: Record<string, Tree> }

/** Every package name in an `npm ls --json` tree. */
export function packagesIn (tree: Tree): Set<string> {
  const names = new Set<string>()
  const walk = (node: Tree): void => {
    for (const [name, child] of Object.entries(node.dependencies ?? {})) {
      names.add(name)
      walk(child)
    }
  }
  walk(tree)
  return names
}

function main (): number {
  const servicePackage = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'packages', 'service')
  const ls = spawnSync('npm', ['ls', '--omit=dev', '--all', '--json'], { cwd: servicePackage, encoding: 'utf8' })
  if (ls.status !== 0) {
    process.stderr.write(`check-service-deps: npm ls failed (exit ${String(ls.status)}):\n${ls.stderr}\n`)
    return 1
  }
  const names = packagesIn(JSON.parse(ls.stdout) as Tree)
  names.delete('tollbooth')
  const found = labOnly.filter((name) => names.has(name))
  if (found.length > 0) {
    process.stderr.write(`check-service-deps: the service's production dependencies include the lab's: ${found.join(', ')}\n`)
    return 1
  }
  process.stdout.write(`check-service-deps: the service's production install has ${names.size} packages, none of ${labOnly.join(', ')}\n`)
  return 0
}

process.exitCode = main()
