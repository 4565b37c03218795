import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, expect } from 'vitest';

// ZZ_TEST_CPU=<file> appends one JSON line per test file: the CPU milliseconds its worker
// process spent (`self`, from this setup file on) and those of the child processes it waited
// for (`children`: git, zz, writers, Chromium), with its wall time. CPU is what a 2-core CI
// machine runs out of, and on a machine shared with other work it varies far less than wall
// time does. Linux only (/proc/self/stat); vitest forks one process per test file.

const out = process.env.ZZ_TEST_CPU;

/** utime, stime, cutime, cstime in ms (fields 14–17 of /proc/self/stat). */
function cpu(): number[] {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return fields.slice(11, 15).map((t) => Number(t) * 10); // USER_HZ is 100 on Linux
}

if (out) {
  const t0 = cpu();
  const w0 = performance.now();
  afterAll(() => {
    const t1 = cpu();
    appendFileSync(
      out,
      `${JSON.stringify({
        file: expect.getState().testPath,
        self: t1[0]! + t1[1]! - t0[0]! - t0[1]!,
        children: t1[2]! + t1[3]! - t0[2]! - t0[3]!,
        wall: Math.round(performance.now() - w0),
      })}\n`,
    );
  });
}
