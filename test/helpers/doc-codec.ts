import type { EntityCodec, OpRecord } from '../../src/store/index.js';

// A minimal entity for store tests: a bag of files set by `put` and removed by `del`.
export type DocState = Map<string, string>;

export const docCodec: EntityCodec<DocState> = {
  empty: () => new Map(),
  clone: (s) => new Map(s),
  parse: (op) => ({ ok: true, op }),
  apply(draft: DocState, op: OpRecord): string[] {
    const path = String(op.args.path);
    if (op.op === 'put') draft.set(path, String(op.args.value));
    else if (op.op === 'del') draft.delete(path);
    return [path];
  },
  file: (s, path) => s.get(path) ?? null,
};
