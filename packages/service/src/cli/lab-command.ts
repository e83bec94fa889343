/**
 * `tollbooth lab ...`: the load lab is its own package (@tollbooth/lab), which production
 * installs leave out. When it is installed (as in this repository's workspace), the command
 * is handed to it; when not, the answer says how to get it. The service never imports the
 * lab statically: the lab depends on the service, not the other way round.
 */

/** What @tollbooth/lab/cli exports for this: run `tollbooth lab <argv>`, resolve to the exit code. */
interface LabCli {
  runLab (argv: string[], options?: { commandName?: string }): Promise<number>
}

const labPackage = '@tollbooth/lab'

export const labMissingMessage = `tollbooth lab: the load lab is not installed. It is the ${labPackage} package, kept out of
production installs. In a checkout of the tollbooth repository, run "npm ci" at the root
(it installs the service and the lab together), then "npx tollbooth lab --help".
`

/** The package itself is absent (not a module missing inside an installed package, which is a real fault). */
function isPackageMissing (err: unknown, specifier: string): boolean {
  const name = specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/')
  const code = (err as { code?: unknown } | null)?.code
  return code === 'ERR_MODULE_NOT_FOUND' && err instanceof Error && err.message.includes(`'${name}'`)
}

export interface LabCommandOptions {
  /** The module to hand the command to (tests name one that is not installed). */
  specifier?: string
  writeError?: (text: string) => void
}

export async function runLabCommand (argv: string[], options: LabCommandOptions = {}): Promise<number> {
  const specifier = options.specifier ?? `${labPackage}/cli`
  let lab: LabCli
  try {
    lab = await import(specifier) as LabCli
  } catch (err) {
    if (!isPackageMissing(err, specifier)) throw err
    ;(options.writeError ?? ((text) => { process.stderr.write(text) }))(labMissingMessage)
    return 2
  }
  return await lab.runLab(argv, { commandName: 'tollbooth lab' })
}
