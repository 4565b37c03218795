import type { ZzRepo, Caller } from '../../src/core/index.js';
import { openEventStream } from '../../src/http/event-stream.js';

// An SSE stream of a repository's commits (http/event-stream.ts) opened at its head, read
// commit by commit as a client would, for the sync tests.

export interface StreamedCommit {
  ref: string;
  revision: string;
  ops: Array<{ op: string; actor: string; args: Record<string, unknown> }>;
}

export function readEventStream(repo: ZzRepo, caller: Caller) {
  const stream = openEventStream(repo, caller, {
    cursor: null,
    heartbeatMs: 60_000,
    onError: (e) => {
      throw e;
    },
  });
  const reader = stream.body.getReader();
  const dec = new TextDecoder();
  let text = '';
  return {
    /** Reads until `enough(commits so far)` holds; throws when the stream ends first. */
    async until(commits: StreamedCommit[], enough: () => boolean): Promise<void> {
      while (!enough()) {
        const { value, done } = await reader.read();
        if (done) throw new Error('stream ended');
        text += dec.decode(value);
        let at: number;
        while ((at = text.indexOf('\n\n')) >= 0) {
          const data = text
            .slice(0, at)
            .split('\n')
            .find((l) => l.startsWith('data: '));
          text = text.slice(at + 2);
          if (data) commits.push(JSON.parse(data.slice(6)) as StreamedCommit);
        }
      }
    },
    close: () => stream.close(),
  };
}
