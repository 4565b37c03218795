import { ZzError } from '../errors.js';

// ZZ_TOKEN, read in one place by every path that picks the token a CLI call acts as (the daemon
// client, the fast path, `zz dashboard`, the in-process path, `zz whoami`). Kept free of
// heavy imports: the fast path loads it.
// Hazard: a ZZ_TOKEN that is set but empty must never fall back to the stored login. An MCP
// client's `"ZZ_TOKEN": "${env:ZZ_TOKEN}"` expands to "" when the variable is not exported,
// and the agent then ran with every one of the owner's tools (review M2).

/**
 * The token ZZ_TOKEN names: undefined when it is not set (use the stored login); an error when
 * it is set but empty or blank, or holds anything a token never does.
 */
export function envToken(env: NodeJS.ProcessEnv): string | undefined {
  const value = env.ZZ_TOKEN;
  if (value === undefined) return undefined;
  if (value.trim() === '')
    throw new ZzError(
      'invalid_argument',
      'ZZ_TOKEN is set but empty (an MCP config\'s "${env:ZZ_TOKEN}" of a variable that is not exported gives that): set it to a token (`zz agent create <name>` mints one, `zz agent token <name>` prints it), or unset it to act as your own login',
    );
  checkTokenText(value, 'ZZ_TOKEN');
  return value;
}

/** Whether `token` has a token's shape: printable ASCII, no spaces (what a header can carry). */
export function isTokenText(token: string): boolean {
  return /^[\x21-\x7e]+$/.test(token);
}

/**
 * A token is one line of visible ASCII. Anything else (a second line from a command
 * substitution, a stray space) is a local mistake, said as such — never sent, where it would
 * fail as an invalid header and look like a network failure.
 */
export function checkTokenText(token: string, source: string): void {
  if (!isTokenText(token)) {
    throw new ZzError(
      'invalid_argument',
      `${source} is not a token: it holds ${/[\r\n]/.test(token) ? 'a line break' : 'spaces or other characters a token never has'}; set it to the token alone`,
    );
  }
}
