/** The loader hooks of record-modules.ts (they run on the loader's own thread). */
import fs from 'node:fs'

interface Resolved { url: string }
type NextResolve = (specifier: string, context: unknown) => Promise<Resolved>

export async function resolve (specifier: string, context: unknown, nextResolve: NextResolve): Promise<Resolved> {
  const resolved = await nextResolve(specifier, context)
  const log = process.env.TOLLBOOTH_MODULE_LOG
  if (log !== undefined) fs.appendFileSync(log, `${resolved.url}\n`)
  return resolved
}
