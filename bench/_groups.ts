import { ObjectWriter } from '../src/git/index.js';
import { benchStore } from './store.js';
const sizes = new Map<string, number[]>();
const orig = ObjectWriter.prototype.writeMany;
ObjectWriter.prototype.writeMany = function (this: ObjectWriter, objects, pending) {
  const key = this.smallPacks ? 'packs' : 'loose';
  if (!sizes.has(key)) sizes.set(key, []);
  sizes.get(key)!.push(objects.length);
  return orig.call(this, objects, pending);
};
process.env.ZZ_BENCH_STORE_ONLY = 'zz-32,zz-32-loose';
const r = await benchStore();
console.log(JSON.stringify({ a: (r['zz-32'] as any).ops_per_s, b: (r['zz-32-loose'] as any).ops_per_s }));
for (const [k, v] of sizes) {
  const small = v.filter((n) => n <= 32).length;
  console.log(k, 'commits', v.length, 'small (<=32 objects)', small, 'median objects', [...v].sort((a, b) => a - b)[v.length >> 1]);
}
