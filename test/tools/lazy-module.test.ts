import { describe, expect, it } from 'vitest';
import { lazyModule } from '../../src/tools/lazy-module.js';

// A tool's use cases are imported once and held: an import() per call cost the daemon ~0.3 ms
// of CPU a request (src/tools/lazy-module.ts).

describe('lazyModule', () => {
  it('loads on first use only, and hands out the same module after', async () => {
    let loads = 0;
    const mod = lazyModule(async () => ({ n: ++loads }));
    expect(loads).toBe(0);
    const [a, b] = await Promise.all([mod(), mod()]);
    const c = await mod();
    expect(loads).toBe(1);
    expect(a).toBe(b);
    expect(c).toBe(a);
  });

  it('tries again after a failed load', async () => {
    let loads = 0;
    const mod = lazyModule(async () => {
      if (++loads === 1) throw new Error('first load fails');
      return { ok: true };
    });
    await expect(mod()).rejects.toThrow('first load fails');
    await expect(mod()).resolves.toEqual({ ok: true });
    expect(loads).toBe(2);
  });

  it('is what every tool file imports its use cases through', async () => {
    const { readdirSync, readFileSync } = await import('node:fs');
    const dir = new URL('../../src/tools/', import.meta.url);
    for (const f of readdirSync(dir).filter((n) => n.endsWith('-tools.ts'))) {
      const text = readFileSync(new URL(f, dir), 'utf8');
      expect(text, f).not.toMatch(/=\s*\(\)\s*=>\s*import\(/);
    }
  });
});
