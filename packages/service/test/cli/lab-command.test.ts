/** `tollbooth lab ...`: handed to the @tollbooth/lab package when it is installed, a clear answer when not. */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { describe, it } from 'node:test'
import { labMissingMessage, runLabCommand } from '../../src/cli/lab-command.js'
import { tollboothBin } from '../../src/launcher/index.js'

async function run (args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn(process.execPath, [tollboothBin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stdout, stderr }
}

describe('tollbooth lab', () => {
  it('runs the lab package\'s command when it is installed (as in this workspace)', async () => {
    const { code, stdout } = await run(['lab', 'scenarios'])
    assert.equal(code, 0)
    assert.match(stdout, /^login-storm /m)
  })

  it('passes the lab\'s exit code on: 2 for a flag it refuses, with its message', async () => {
    const { code, stderr } = await run(['lab', 'run', '--scenario', 'nope'])
    assert.equal(code, 2)
    assert.match(stderr, /unknown scenario "nope"/)
  })

  it('says how to install the lab when the package is missing, with exit code 2', async () => {
    let written = ''
    const code = await runLabCommand(['scenarios'], { specifier: '@tollbooth/not-installed/cli', writeError: (text) => { written += text } })
    assert.equal(code, 2)
    assert.equal(written, labMissingMessage)
    assert.match(written, /npm ci/)
  })

  it('lets other failures to load an installed lab through, rather than calling it missing', async () => {
    await assert.rejects(runLabCommand(['scenarios'], { specifier: 'tollbooth/no-such-entry', writeError: () => { assert.fail('not a missing package') } }), { code: 'ERR_PACKAGE_PATH_NOT_EXPORTED' })
  })
})
