import { execFileSync, spawnSync } from 'node:child_process';

// Test and bench only: thousands of real Lanes in one `git fast-import` run (10,000 in a few
// seconds, where as many lane_propose calls take minutes). Each is a copy of one Lane that zz
// proposed, its id (and its op's id) replaced throughout, so each folds as a Lane of its own
// (a copy under another name is entity_corrupt: corrupt.test.ts). The refs are written loose,
// as zz writes them.

/** Lanes `ids` made in `dir` as copies of the one-commit Lane `template` (its id). */
export function copyLanes(dir: string, template: string, ids: readonly string[]): void {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: dir, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const ref = `refs/zz/lanes/${template}`;
  const raw = git('cat-file', 'commit', ref);
  const [headers, message] = [
    raw.slice(0, raw.indexOf('\n\n')),
    raw.slice(raw.indexOf('\n\n') + 2),
  ];
  if (/^parent /m.test(headers)) throw new Error(`${ref} has more than one commit`);
  const person = (role: string) => headers.match(new RegExp(`^${role} (.*)$`, 'm'))![1]!;
  const laneJson = git('show', `${ref}:lane.json`);
  const opId = message.match(/"id":"([0-9a-f]+-)[0-9a-f]+"/);
  if (!opId) throw new Error(`${ref}: no op id in its message`);
  const chunks: string[] = [];
  const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
  ids.forEach((id, i) => {
    const swap = (text: string) => text.split(`"${template}"`).join(`"${id}"`);
    const msg = swap(message)
      .replace(`lane_propose ${template}:`, `lane_propose ${id}:`)
      .replace(
        /"id":"[0-9a-f]+-[0-9a-f]+"/,
        `"id":"${opId[1]}${i.toString(16).padStart(32, '0')}"`,
      );
    chunks.push(
      `commit refs/zz/lanes/${id}\n` +
        `author ${person('author')}\ncommitter ${person('committer')}\n` +
        data(msg) +
        `M 100644 inline lane.json\n` +
        data(swap(laneJson)),
    );
  });
  const r = spawnSync('git', ['fast-import', '--quiet'], {
    cwd: dir,
    input: chunks.join(''),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    // Hazard: fast-import's many small allocations made glibc grow and trim the heap by brk
    // tens of thousands of times: 3,000 Lanes took 9-20 s of system time, 0.2 s with a pad.
    env: { ...process.env, MALLOC_TOP_PAD_: String(256 * 1024 * 1024) },
  });
  if (r.status !== 0) throw new Error(`git fast-import failed: ${r.stderr}`);
}
