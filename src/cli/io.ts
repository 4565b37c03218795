// The CLI's window on the world, injected so that commands are tested in-process.
export interface CliIO {
  stdout: (s: string) => void;
  /** Bytes to stdout as they are (`zz git show-file` of a binary file into a pipe or file). */
  stdoutBytes?: (b: Uint8Array) => void;
  stderr: (s: string) => void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  isTTY: boolean;
  /** Whether stderr is a terminal (progress bars); defaults to isTTY. */
  stderrIsTTY?: boolean;
  /** Whether stdin is a terminal: a person is there to answer ssh's passphrase prompt. */
  stdinIsTTY?: boolean;
  /**
   * Resolves when the process is asked to stop (SIGINT/SIGTERM/SIGHUP). Only long-running commands
   * read it: reading it is what tells main.ts to let the command finish rather than exit at
   * once on the first signal.
   */
  stopSignal?: Promise<void>;
  /**
   * A line for main.ts to print on stderr should a signal end the command at once (it still
   * exits 130/143): what the interruption left behind and what to do. Commands that do not
   * read stopSignal set it; the last one set is printed.
   */
  setInterruptNote?: (line: string) => void;
  /**
   * The command has given up on what it wrote to stdout (`zz mcp` whose client closed stdin and
   * stopped reading): main.ts then exits without waiting for stdout to drain, dropping it.
   */
  dropStdout?: () => void;
  /**
   * Resolves once stdout has taken what was written (at once when it needs no draining or is
   * closed). A pipe to a slow reader is written asynchronously: a loop writing a file's pages
   * without waiting would hold the whole file in memory.
   */
  drain?: () => Promise<void>;
}

/** The page a whole file is read in (the tool's largest: see callTool's loop). */
export const WHOLE_FILE_PAGE = 16 * 1024 * 1024;

export function useColor(io: CliIO): boolean {
  return io.isTTY && !io.env.NO_COLOR && io.env.TERM !== 'dumb';
}

/**
 * `zz git show-file` into a pipe or a file, with neither --offset nor --limit: the whole file,
 * not its first page. The fast path leaves such a call to the full path, which pages it.
 */
export function wholeFileWanted(
  io: CliIO,
  tool: string,
  json: boolean,
  args: Record<string, unknown>,
): boolean {
  return (
    tool === 'git_show_file' &&
    !json &&
    !io.isTTY &&
    args.offset === undefined &&
    args.limit === undefined
  );
}
