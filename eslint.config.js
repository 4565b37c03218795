import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The git runner and object parsers, refused outside src/git/ everywhere.
const gitInternals = {
  group: [
    '**/git/index.js',
    '**/git/native-git.js',
    '**/git/objects.js',
    '**/git/history-common.js',
  ],
  importNames: ['runGit', 'git', 'spawnGit', 'parseCommit', 'parseTree'],
  message:
    'No git command line or git output parsing outside src/git/: call (or add) a typed function in src/git/ (e.g. git/queries.ts).',
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '**/_*tmp*', '**/_prof*'] },
  {
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { module: 'writable', require: 'readonly' },
    },
  },
  {
    // The dashboard's browser modules (served as-is, no build step).
    files: ['src/web/assets/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        'document location history addEventListener removeEventListener fetch FormData EventSource ResizeObserver sessionStorage URLSearchParams setTimeout clearTimeout setInterval clearInterval'
          .split(' ')
          .map((g) => [g, 'readonly']),
      ),
    },
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
      // Validators match control characters on purpose.
      'no-control-regex': 'off',
    },
  },
  // Git only in git/ (DESIGN §11): above src/git/ nothing builds a git command line or parses
  // git output. runGit/git (the native runner), spawnGit and parseCommit/parseTree stay in
  // git/, which offers typed functions instead (git/queries.ts, …); processes are
  // spawned only in git/, models/ (exec: adapters), github/ (`gh auth token`) and cli/.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/git/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['node:child_process', 'child_process'].map((name) => ({
            name,
            message:
              'Spawn processes only in src/git/ (git), src/models/, src/github/ or src/cli/.',
          })),
          patterns: [gitInternals],
        },
      ],
    },
  },
  {
    // models/ (exec: adapters), github/ (`gh auth token`) and cli/ (opening a browser) spawn.
    files: ['src/models/**/*.ts', 'src/github/**/*.ts', 'src/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [gitInternals],
        },
      ],
    },
  },
  {
    // Even where spawning is allowed, `git` itself is run only from src/git/.
    files: ['src/**/*.ts'],
    ignores: ['src/git/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[arguments.0.value='git']",
          message: 'Run git only from src/git/ (add a typed function there).',
        },
      ],
    },
  },
  {
    files: ['test/**', 'bench/**', 'src/cli/**', 'src/http/log*.ts'],
    rules: { 'no-console': 'off' },
  },
);
