import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { labUsage } from '../../src/cli/commands.js'
import { allStrategies } from '../../src/lab.js'
import { builtInScenarios } from '../../src/scenarios/index.js'
import { repoRoot } from '../helpers/paths.js'

const guide = fs.readFileSync(path.join(repoRoot, 'docs', 'reference', 'cli.md'), 'utf8')

describe('docs/reference/cli.md stays in step with the lab', () => {
  it('documents every flag of `tollbooth lab --help`', () => {
    const flags = [...labUsage.matchAll(/^\s+(--[a-z0-9-]+)/gm)].map((match) => match[1] as string)
    assert.ok(flags.length > 20)
    for (const flag of flags) assert.ok(guide.includes(flag), `${flag} documented`)
  })

  it('documents every built-in scenario and every strategy', () => {
    for (const name of Object.keys(builtInScenarios)) assert.ok(guide.includes(`\`${name}\``), `scenario ${name}`)
    for (const strategy of allStrategies) assert.ok(guide.includes(`| \`${strategy}\` |`), `strategy ${strategy}`)
  })
})
