// Full-text search over Ladder rungs: per-repo shards in the user cache, read lazily,
// and a watcher that says when a clone's ladder ref may have moved. It must not know about
// HTTP, tools, stores or git objects: callers hand it rungs and oids.

export {
  DEFAULT_LIMIT,
  LadderSearch,
  MAX_LIMIT,
  MAX_RESULTS,
  OPTIONS_VERSION,
  shardFileName,
  type ApplyDiffResult,
  type IndexRung,
  type InputsCheck,
  type KeyedRungs,
  type LadderDiff,
  type LadderSearchOptions,
  type LadderSearchStats,
  type RungSource,
  type SearchHit,
  type SearchPage,
  type SearchRequest,
  type SetRepoOptions,
  type SetRepoResult,
  type ShardStats,
} from './ladder-index.js';
export { watchRefs, type RefWatcher, type WatchRefsOptions } from './ref-watcher.js';
export { indexTerms, queryTokens, splitIdentifier } from './tokenize.js';
