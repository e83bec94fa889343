/** Why a line of an import file is not imported: a code for programs, a reason for people. Never the hash itself. */
export type RejectionCode = 'malformed_json' | 'line_too_long' | 'invalid_field' | 'invalid_email' | 'invalid_name' | 'unknown_hash_format' | 'hash_out_of_bounds' | 'firebase_params_missing' | 'database_refused'

export class LineRejected extends Error {
  constructor (readonly code: RejectionCode, readonly reason: string) {
    super(reason)
  }
}
