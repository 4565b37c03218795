#!/usr/bin/env node
// The zz binary: wires process IO and signals to run(), the testable command table.
import { run } from './run.js';

const stop = new Promise<void>((resolve) => {
  let stopping = false;
  const onSignal = () => {
    if (stopping) process.exit(130);
    stopping = true;
    resolve();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
});

const code = await run(process.argv.slice(2), {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  env: process.env,
  cwd: process.cwd(),
  isTTY: !!process.stdout.isTTY,
  stderrIsTTY: !!process.stderr.isTTY,
  stopSignal: stop,
});
process.exitCode = code;
// Long-running commands (serve, mcp) return only when they are done, so a finished command
// exits here: idle git readers and signal listeners must not keep it alive.
setImmediate(() => process.exit(code));
