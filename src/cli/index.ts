// The zz command line (yargs): a command table over the tool registry plus setup commands.
// Talks to the running daemon when there is one, else runs tools in-process. Knows no rules.
export { run } from './run.js';
export type { CliIO } from './io.js';
