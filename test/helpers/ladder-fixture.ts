import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { initRepo, ZzRepo } from '../../src/core/index.js';
import { OWNER } from './core-fixture.js';
import { makeRepo, sh } from './temp-repo.js';

// A small, realistic project for Ladder tests: README, package.json, TypeScript sources with
// doc comments and exports, a guide, a licence copied into a vendored folder, a binary, a
// lockfile (a path a rung cannot have), and a tag.

export const FIXTURE_FILES: Record<string, string | Buffer> = {
  'README.md': `# Tern

[![build](https://img.shields.io/badge/build-passing-green.svg)](https://ci.example.com)

Tern is a tiny task scheduler for Node that runs jobs on cron-like schedules and retries
failed runs with exponential backoff.

## Install

npm install tern

## Usage

See docs/guide.md.
`,
  'package.json': JSON.stringify(
    {
      name: 'tern',
      version: '1.0.0',
      description: 'A tiny cron-like task scheduler with retries and backoff.',
      keywords: ['cron', 'scheduler', 'jobs'],
      main: 'dist/index.js',
      scripts: { build: 'tsc', test: 'vitest run' },
    },
    null,
    2,
  ),
  'src/index.ts': `/**
 * Tern's public entry point: create a scheduler, register jobs, start and stop it.
 */
export { Scheduler, type SchedulerOptions } from './scheduler.js';
export { parseSchedule } from './schedule.js';
export { backoffDelay } from './retry.js';
`,
  'src/scheduler.ts': `import { parseSchedule, type Schedule } from './schedule.js';
import { backoffDelay } from './retry.js';

export interface SchedulerOptions {
  maxRetries?: number;
}

/**
 * Runs registered jobs when their schedule fires, one at a time per job, retrying failures
 * with exponential backoff.
 */
export class Scheduler {
  private jobs = new Map<string, { schedule: Schedule; run: () => Promise<void> }>();
  constructor(private readonly opts: SchedulerOptions = {}) {}

  /** Registers a job under a name. */
  add(name: string, spec: string, run: () => Promise<void>): void {
    this.jobs.set(name, { schedule: parseSchedule(spec), run });
  }

  delayFor(attempt: number): number {
    return backoffDelay(attempt, this.opts.maxRetries ?? 5);
  }
}
`,
  'src/schedule.ts': `// Parses cron-like schedule strings ("*/5 * * * *") into a matcher of minutes and hours.

export interface Schedule {
  minutes: number[];
  hours: number[];
}

export function parseSchedule(spec: string): Schedule {
  const [m = '*', h = '*'] = spec.split(' ');
  const expand = (f: string, max: number) =>
    f === '*' ? [...Array(max).keys()] : f.split(',').map(Number);
  return { minutes: expand(m, 60), hours: expand(h, 24) };
}
`,
  'src/retry.ts': `/**
 * Exponential backoff for failed job runs: 1 s, 2 s, 4 s … capped at one minute.
 */
export function backoffDelay(attempt: number, max: number): number {
  const n = Math.min(attempt, max);
  return Math.min(60_000, 1000 * 2 ** n);
}

export const MAX_DELAY_MS = 60_000;
`,
  'src/util/clock.ts': `/** A clock that tests can move by hand. */
export class ManualClock {
  t = 0;
  now(): number {
    return this.t;
  }
}
`,
  'docs/guide.md': `# Operator guide

How to run Tern in production: configure schedules, watch retries and rotate logs.

## Schedules

Use five fields like cron.

## Retries

Failed runs back off exponentially.
`,
  LICENSE: `MIT License

Copyright (c) 2024 Tern authors

Permission is hereby granted, free of charge, to any person obtaining a copy of this software.
`,
  'vendor/LICENSE': `MIT License

Copyright (c) 2024 Tern authors

Permission is hereby granted, free of charge, to any person obtaining a copy of this software.
`,
  'assets/logo.png': Buffer.from([
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 1, 2, 3,
  ]),
  'yarn.lock': '# yarn lockfile v1\n\ntern@1.0.0:\n  version "1.0.0"\n',
};

export function writeFiles(dir: string, files: Record<string, string | Buffer>): void {
  for (const [p, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), content);
  }
}

/** Adds the fixture project to a repository made by makeRepo() and tags it v1.0.0. */
export function addFixture(dir: string): void {
  writeFiles(dir, FIXTURE_FILES);
  sh(dir, 'add', '-A');
  sh(dir, 'commit', '-q', '-m', 'feat: scheduler, retries and the operator guide');
  sh(dir, 'tag', '-a', 'v1.0.0', '-m', 'Tern 1.0.0');
}

export function commitFile(dir: string, path: string, content: string, message: string): string {
  writeFiles(dir, { [path]: content });
  sh(dir, 'add', '-A');
  sh(dir, 'commit', '-q', '-m', message);
  return sh(dir, 'rev-parse', 'HEAD');
}

// The repository of ladder*.test.ts: the fixture committed in a fresh checkout, zz initialised
// (acme/tern), opened in this process. Live bindings, set by the hooks ladderTestRepo() adds.
export let ladderDir: string;
export let ladderRepo: ZzRepo;

/** Call once at the top of the file: the repository made before its tests, removed after. */
export function ladderTestRepo(): void {
  let cleanup: () => void;
  beforeAll(async () => {
    ({ dir: ladderDir, cleanup } = makeRepo('zz-ladder-'));
    addFixture(ladderDir);
    ladderRepo = await ZzRepo.open(ladderDir, { key: 'acme/tern' });
    await initRepo(ladderRepo, { owner: OWNER.actor, default_branch: 'main' });
  });
  afterAll(() => {
    ladderRepo.close();
    cleanup();
  });
}

export const revParse = (spec: string) => sh(ladderDir, 'rev-parse', spec);
