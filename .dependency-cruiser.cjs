/**
 * The house rules, checked in CI (`npm run check:architecture`): no import cycle between files in
 * either package; a folder's files are reached from outside it through its index.ts only; the
 * lab's harness and the software authenticator are reached by nothing of the service's own; lower
 * rooms never import higher ones.
 */
const service = '^packages/service/src/'
const lab = '^packages/lab/src/'

/** From a file in one top-level room of `root` to a file of another room that is not that room's index. */
const throughFace = (root) => ({
  from: { path: `${root}([^/]+)/` },
  to: { path: `${root}(?!$1/)[^/]+/`, pathNot: `${root}[^/]+/index\\.ts$` },
})
/** From a file directly in a room to a file of one of its sub-rooms that is not the sub-room's index. */
const throughSubFace = (root) => ({
  from: { path: `(${root}[^/]+)/[^/]+$` },
  to: { path: '^$1/[^/]+/', pathNot: '^$1/[^/]+/index\\.ts$' },
})

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'No two files import each other, directly or around a circle.', from: {}, to: { circular: true } },
    { name: 'service-room-face', severity: 'error', comment: 'Another room of the service is reached through its index.ts.', ...throughFace(service) },
    { name: 'service-sub-room-face', severity: 'error', comment: 'A sub-room (http/routes, hashing/hashers ...) is reached through its index.ts.', ...throughSubFace(service) },
    { name: 'lab-room-face', severity: 'error', comment: 'Another room of the lab is reached through its index.ts.', ...throughFace(lab) },
    { name: 'lab-sub-room-face', severity: 'error', comment: 'A sub-room of the lab is reached through its index.ts.', ...throughSubFace(lab) },
    {
      name: 'harness-stays-out',
      severity: 'error',
      comment: 'The lab\'s harness (the seed articles\' strategies, its diagnostic routes) is never loaded by the service itself.',
      from: { path: service, pathNot: `${service}harness/` },
      to: { path: `${service}harness/` },
    },
    {
      name: 'software-authenticator-stays-out',
      severity: 'error',
      comment: 'The software authenticator (tests and the lab sign assertions with it) is never loaded by the service itself.',
      from: { path: service, pathNot: `${service}software-authenticator/` },
      to: { path: `${service}software-authenticator/` },
    },
    {
      name: 'hashing-knows-no-http-nor-sql',
      severity: 'error',
      comment: 'The password engine knows nothing of HTTP, SQL or accounts.',
      from: { path: `${service}(hashing|machine)/` },
      to: { path: `${service}(?!hashing/|machine/|errors\\.ts)` },
    },
    {
      name: 'storage-below-rules',
      severity: 'error',
      comment: 'db/, keys/ and mail/ sit below the rules and the HTTP surface.',
      from: { path: `${service}(db|keys|mail)/` },
      to: { path: `${service}(http|overload|accounts|process|cli|launcher|metrics|config)/` },
    },
    {
      name: 'rules-below-http',
      severity: 'error',
      comment: 'The account rules and overload control know nothing of the app, the process or the CLI.',
      from: { path: `${service}(accounts|overload)/` },
      to: { path: `${service}(http|process|cli|launcher)/` },
    },
    {
      name: 'src-not-tests',
      severity: 'error',
      comment: 'Production code never imports tests or benchmarks.',
      from: { path: '^packages/[^/]+/src/' },
      to: { path: '^packages/[^/]+/(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
}
