/** The import room's face: `tollbooth users import` (cli/users-command.ts) uses these. */
export { importUsers, defaultImportBatchSize } from './import-users.js'
export { ImportReport, renderSummary, type ImportSummary } from './import-report.js'
export { firebaseHashParams, parseFirebaseParamsFile, type FirebaseParamsText } from './firebase-params.js'
