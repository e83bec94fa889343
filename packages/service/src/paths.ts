import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The package root (the folder with tollbooth's package.json), from src/ or dist/src/. */
export const packageRoot: string = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = path.join(dir, 'package.json')
    if (fs.existsSync(candidate) && (JSON.parse(fs.readFileSync(candidate, 'utf8')) as { name?: string }).name === 'tollbooth') return dir
    const parent = path.dirname(dir)
    if (parent === dir) throw new Error('tollbooth package root not found')
    dir = parent
  }
})()

export const packageVersion: string = (JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version
