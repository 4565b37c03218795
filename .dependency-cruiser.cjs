// The layering rule, executable: lower layers never import higher ones, and each third-party
// package stays inside the one folder that owns it. Run by `npm run deps` (part of `npm run check`).
const rank = {
  errors: 0,
  schema: 1,
  git: 2,
  github: 3,
  search: 3,
  store: 3,
  core: 4,
  tools: 5,
  work: 6,
  mcp: 6,
  http: 7,
  cli: 8,
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
].map(([pkg, folder]) => ({
  name: `${pkg.replace(/[^a-z]/g, '')}-only-in-${folder}`,
  comment: `${pkg} may only be imported under src/${folder}/`,
  severity: 'error',
  from: { pathNot: `^src/${folder}/` },
  to: { path: `node_modules/${pkg}` },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    ...confined,
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
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
