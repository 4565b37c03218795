import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FORBIDDEN, SHARED_PROCESS } from './shared-process.js';

// The files vitest runs in a shared worker process (test/setup/shared-process.ts) keep to its
// rules: a file added there, or an edit to one already there, that mocks, sets process.env or
// looks at its own process goes red here instead of making another file fail at random.

describe('files run in a shared worker process', () => {
  it('exist and do nothing that outlives them or inspects their process', () => {
    const broken: string[] = [];
    for (const file of SHARED_PROCESS) {
      if (!existsSync(file)) {
        broken.push(`${file}: no such file`);
        continue;
      }
      // The browser tests share their Chromium and daemon through ./harness.js.
      if (file.startsWith('test/web/')) broken.push(`${file}: a browser test`);
      const text = readFileSync(file, 'utf8');
      for (const [re, why] of FORBIDDEN) {
        const m = re.exec(text);
        if (m) broken.push(`${file}: ${m[0]} (${why})`);
      }
    }
    expect(broken).toEqual([]);
    expect(new Set(SHARED_PROCESS).size).toBe(SHARED_PROCESS.length);
  });
});
