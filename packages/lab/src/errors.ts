/**
 * The lab's own errors: a flag, a scenario or a load that cannot be run. They never travel
 * over HTTP (the service's coded errors are its own registry), so there is one code, and the
 * command line turns it into exit code 2 with the message.
 */
export type LabErrorCode = 'CONFIG_INVALID'

export class LabError extends Error {
  readonly code: LabErrorCode
  /** The flag or option at fault, when there is one. */
  readonly field: string | undefined

  constructor (code: LabErrorCode, message: string, options: { field?: string } = {}) {
    super(message)
    this.name = 'LabError'
    this.code = code
    this.field = options.field
  }
}

export function createError (code: LabErrorCode, message: string, options?: { field?: string }): LabError {
  return new LabError(code, message, options)
}

export function isLabError (err: unknown, code?: LabErrorCode): err is LabError {
  return err instanceof LabError && (code === undefined || err.code === code)
}
