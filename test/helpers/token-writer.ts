import { TokenStore } from '../../src/core/token-store.js';

// Run as a separate process by the token store tests: creates tokens for `<prefix>-<i>`
// and prints them as JSON lines.
const [gitdir, prefix, count] = process.argv.slice(2);
const store = new TokenStore(gitdir!, { lockTimeoutMs: 30_000 });
for (let i = 0; i < Number(count); i++) {
  const { token, actor } = await store.create(`${prefix}-${i}@example.com`, 'login');
  process.stdout.write(JSON.stringify({ token, actor }) + '\n');
}
