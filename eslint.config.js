import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
        'document location history addEventListener removeEventListener fetch FormData EventSource ResizeObserver setTimeout clearTimeout setInterval clearInterval'
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
  {
    files: ['test/**', 'bench/**', 'src/cli/**', 'src/http/log*.ts'],
    rules: { 'no-console': 'off' },
  },
);
