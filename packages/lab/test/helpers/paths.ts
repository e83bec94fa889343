import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The folder with a package.json whose `name` is given, from this file (in test/ or dist/test/) upwards. */
function folderOf (name: string): string {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const file = path.join(dir, 'package.json')
    if (fs.existsSync(file) && (JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string }).name === name) return dir
    const parent = path.dirname(dir)
    if (parent === dir) throw new Error(`no package ${name} above ${fileURLToPath(import.meta.url)}`)
    dir = parent
  }
}

/** The lab package (packages/lab). */
export const labRoot = folderOf('@tollbooth/lab')
/** The workspace root: README.md and docs/ live there. */
export const repoRoot = folderOf('tollbooth-workspace')
