// JSON text of answers whose parts are shared between reads. A lane_get page holds 50 Ask
// views and 50 history entries that the read caches (views.ts) hand out again and again, the
// same objects, until a write changes them; JSON.stringify wrote all of them anew for every
// call (~270 µs of a 35 KB page on Node 20, more than the rest of the read). A part sealed
// here has its text made once and reused.
//
// Sealing is a promise: the object and everything it holds are never changed again (views are
// frozen and made of stored documents, which are never changed in place). A sealed object
// that is changed anyway keeps answering its old text.

const sealed = new WeakSet<object>();
const texts = new WeakMap<object, string>();

/** Marks `v` (and all it holds) as never changed again: its JSON text may be kept. */
export function sealJson<T extends object>(v: T): T {
  sealed.add(v);
  return v;
}

/**
 * JSON.stringify(v), reusing the text of sealed parts. Plain data (what tools answer) is
 * written here; anything else (a toJSON method, a class instance, a boxed primitive) is left
 * to JSON.stringify, which then gives it no key argument ("" instead of its property name).
 */
export function sealedJsonText(v: unknown): string {
  // Only undefined, a function or a symbol has no text (JSON.stringify answers undefined):
  // never an answer.
  return write(v, 0) as string;
}

// Sealed parts sit in arrays near the top of an answer (`{ result: { asks: [view, …] } }`):
// objects are walked here only as the answer's envelope (depth 0 and 1), arrays down to depth
// 2; any other unsealed value is left whole to JSON.stringify, much faster than walking it
// here (a write's answer, `{ result: { ask: view, … } }`, is walked two levels deep only).
const OBJECT_DEPTH = 2;
const ARRAY_DEPTH = 3;

function write(v: unknown, depth: number): string | undefined {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (sealed.has(v)) {
    let t = texts.get(v);
    if (t === undefined) texts.set(v, (t = JSON.stringify(v)));
    return t;
  }
  const array = Array.isArray(v);
  if (depth >= (array ? ARRAY_DEPTH : OBJECT_DEPTH)) return JSON.stringify(v);
  if (array) {
    // By index, not map(): a hole is written null, as JSON.stringify does.
    let out = '[';
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out += ',';
      out += write(v[i], depth + 1) ?? 'null';
    }
    return out + ']';
  }
  const proto: unknown = Object.getPrototypeOf(v);
  if ((proto !== Object.prototype && proto !== null) || 'toJSON' in v) return JSON.stringify(v);
  const o = v as Record<string, unknown>;
  let out = '{';
  for (const key of Object.keys(o)) {
    const t = write(o[key], depth + 1);
    if (t === undefined) continue;
    if (out.length > 1) out += ',';
    out += JSON.stringify(key) + ':' + t;
  }
  return out + '}';
}
