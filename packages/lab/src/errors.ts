/**
 * The lab's own errors: a flag, a scenario or a load that cannot be run. They never travel over
 * HTTP (the service's coded errors are its own registry), so there is one code, and the command
 * line turns it into exit code 2 with the message.
 */
export type LabErrorCode = 'CONFIG_INVALID'

export class LabError extends Error {
  override readonly name = 'LabError'

  /** `field`: the flag or option at fault, when there is one. */
  constructor (readonly code: LabErrorCode, message: string, readonly field?: string) {
    super(message)
  }
}

export function createError (code: LabErrorCode, message: string, options: { field?: string } = {}): LabError {
  return new LabError(code, message, options.field)
}

export function isLabError (err: unknown, code?: LabErrorCode): err is LabError {
  return err instanceof LabError && (code === undefined || err.code === code)
}
