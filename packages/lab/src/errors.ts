/**
 * The lab's own error: a flag, a scenario or a load that cannot be run. It never travels over
 * HTTP (the service's coded errors are its own registry), so it has one code, and the command
 * line turns it into exit code 2 with the message.
 */
import type { Static, TObject, TSchema } from '@sinclair/typebox'
import { Value, ValueErrorType } from '@sinclair/typebox/value'

export class LabError extends Error {
  override readonly name = 'LabError'
  readonly code = 'CONFIG_INVALID'

  /** `field`: the flag or option at fault, when there is one. */
  constructor (message: string, readonly field?: string) {
    super(message)
  }
}

/**
 * `value` as the schema's type, or a LabError for the first thing wrong with it:
 * "<prefix>steps[0].method must be one of ...", where the schema's description is the message.
 */
export function validated<T extends TSchema> (schema: T, value: unknown, prefix = '', whole = 'the value'): Static<T> {
  const error = Value.Errors(schema, value).First()
  if (error === undefined) return value as Static<T>
  const where = error.path.slice(1).split('/').map((key) => (/^\d+$/.test(key) ? `[${key}]` : `.${key}`)).join('').replace(/^\./, '')
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    throw new LabError(`${prefix}${where} is not a field here (${Object.keys((error.schema as TObject).properties).join(', ')})`, where)
  }
  throw new LabError(`${prefix}${where === '' ? whole : where} ${String(error.schema.description ?? error.message)}`, where)
}
