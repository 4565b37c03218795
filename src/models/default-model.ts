import { ZzError } from '../errors.js';
import { configGet } from '../git/index.js';

/**
 * The model to use: the one given (`--model`), else `git config zz.model` of the checkout,
 * else a clear error that says how to set one.
 */
export async function defaultModelSpec(given: string | undefined, cwd: string): Promise<string> {
  if (given) return given;
  const configured = await configGet(cwd, 'zz.model').catch(() => null);
  if (configured) return configured;
  throw new ZzError(
    'invalid_argument',
    'no model given: pass --model openai:<model> | anthropic:<model> | exec:<command>, ' +
      'or set a default with `git config zz.model openai:llama3.1`',
  );
}
