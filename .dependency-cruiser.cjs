// The layering rule, executable: lower layers never import higher ones, and each third-party
// package stays inside the one folder that owns it. Run by `npm run deps` (part of `npm run check`).
// DESIGN §11: front ends (cli · http · mcp · web · work) → daemon (composition root) → tools →
// core → store/search/github → models → git, with schema, errors and local (this machine's
// files) as leaves. http, mcp and web are siblings the daemon wires together; work talks to a
// daemon over HTTP, so it sits beside it.
const rank = {
  errors: 0,
  schema: 1,
  local: 1,
  git: 2,
  models: 3,
  github: 4,
  search: 4,
  store: 4,
  core: 5,
  tools: 6,
  http: 7,
  mcp: 7,
  web: 7,
  daemon: 8,
  work: 8,
  cli: 9,
};
const layers = Object.keys(rank);
const pathOf = (l) => (l === 'errors' ? '^src/errors\\.ts$' : `^src/${l}/`);

const layerRules = layers
  .map((from) => {
    const higher = layers.filter(
      (to) => rank[to] > rank[from] || (rank[to] === rank[from] && to !== from),
    );
    return {
      name: `no-${from}-upward`,
      comment: `${from} must not import a higher (or sibling) layer: ${higher.join(', ')}`,
      severity: 'error',
      from: { path: pathOf(from) },
      to: { path: higher.map(pathOf).join('|') },
    };
  })
  .filter((r) => r.to.path.length > 0);

const confined = [
  ['isomorphic-git', 'git'],
  ['minisearch', 'search'],
  ['chokidar', 'search'],
  ['yargs', 'cli'],
  ['@modelcontextprotocol', 'mcp'],
  ['@octokit', 'github'],
  ['ai', 'models'],
  ['@ai-sdk', 'models'],
  ['preact', 'web'],
  ['htm', 'web'],
  ['cli-progress', 'cli'],
].map(([pkg, folder]) => ({
  name: `${pkg.replace(/[^a-z]/g, '')}-only-in-${folder}`,
  comment: `${pkg} may only be imported under src/${folder}/`,
  severity: 'error',
  from: { pathNot: `^src/${folder}/` },
  to: { path: `node_modules/${pkg}/` },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    ...confined,
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'test-only-packages',
      comment:
        'playwright-core, undici (MockAgent), isomorphic-git and fast-check are for tests and bench only',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: 'node_modules/(playwright-core|undici|isomorphic-git|fast-check)/' },
    },
    {
      name: 'no-test-imports-in-src',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
