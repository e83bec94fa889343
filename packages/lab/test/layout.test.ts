/**
 * The lab's source stays a house a newcomer can find their way in: no two files import each other
 * (directly or round a loop), a folder is entered only by its index.ts, no folder holds more than
 * 15 files and no file more than 400 lines. Read from src/ as text: relative imports only.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { labRoot } from './helpers/paths.js'

const srcRoot = path.join(labRoot, 'src')
const maxFilesPerFolder = 15
const maxLinesPerFile = 400

function sourceFiles (dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(full)
    return entry.name.endsWith('.ts') ? [full] : []
  }).sort()
}

const files = sourceFiles(srcRoot)
const name = (file: string): string => path.relative(srcRoot, file)

/** Each file's relative imports (types too: a loop of types is a loop), as files. */
const importsOf = new Map(files.map((file) => {
  const text = fs.readFileSync(file, 'utf8')
  const specifiers = [...text.matchAll(/^(?:import|export)\b[^'"]*?\bfrom\s+'([^']+)'/gm)].map((match) => match[1] as string).filter((specifier) => specifier.startsWith('.'))
  return [file, specifiers.map((specifier) => path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts'))]
}))

describe('the lab\'s source layout', () => {
  it('imports only files that exist (the check reads every import)', () => {
    assert.ok(files.length > 40, `${files.length} files read`)
    for (const [file, imported] of importsOf) {
      for (const target of imported) assert.ok(fs.existsSync(target), `${name(file)} imports ${name(target)}`)
    }
  })

  it('has no import cycle', () => {
    const done = new Set<string>()
    const trail: string[] = []
    const visit = (file: string): void => {
      const at = trail.indexOf(file)
      if (at !== -1) assert.fail(`an import cycle: ${[...trail.slice(at), file].map(name).join(' -> ')}`)
      if (done.has(file)) return
      trail.push(file)
      for (const target of importsOf.get(file) ?? []) visit(target)
      trail.pop()
      done.add(file)
    }
    for (const file of files) visit(file)
  })

  it('enters a folder only by its index.ts; files in one folder, or below it, import each other directly', () => {
    for (const [file, imported] of importsOf) {
      for (const target of imported) {
        const targetDir = path.dirname(target)
        const within = path.dirname(file) === targetDir || path.dirname(file).startsWith(targetDir + path.sep)
        assert.ok(within || path.basename(target) === 'index.ts', `${name(file)} imports ${name(target)}: import ${name(path.join(targetDir, 'index.ts'))} instead`)
      }
    }
  })

  it(`keeps every folder to ${maxFilesPerFolder} files, and gives each an index.ts`, () => {
    for (const dir of new Set(files.map((file) => path.dirname(file)))) {
      const entries = fs.readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isFile())
      assert.ok(entries.length <= maxFilesPerFolder, `${name(dir) || 'src'} holds ${entries.length} files`)
      if (dir !== srcRoot) assert.ok(entries.some((entry) => entry.name === 'index.ts'), `${name(dir)} has no index.ts`)
    }
  })

  it(`keeps every file to ${maxLinesPerFile} lines`, () => {
    for (const file of files) {
      const lines = fs.readFileSync(file, 'utf8').split('\n').length - 1
      assert.ok(lines <= maxLinesPerFile, `${name(file)}: ${lines} lines`)
    }
  })
})
