// The Ladder: commit-anchored summaries on refs/zz/ladder — state codec, read/write use cases,
// the offline build (extract.ts is pure text work), and search-sync.ts keeping a LadderSearch
// in step. Nothing here knows about HTTP, MCP or the CLI.
export {
  BUILD_VERSION,
  extractiveSummarizer,
  ladderBuild,
  type BuildProgress,
  type LadderBuildOptions,
  type LadderBuildResult,
  type Summarizer,
} from './build.js';
export {
  currentOidOf,
  DEFAULT_DETAIL_CHARS,
  headIndex,
  isStale,
  ladderEntity,
  ladderHistory,
  ladderRead,
  ladderWriteRung,
  MAX_DETAIL_CHARS,
  MAX_WRITE_RUNGS,
  readLadder,
  type HeadIndex,
  type LadderHistoryArgs,
  type LadderReadArgs,
  type LadderReadResult,
  type LadderWriteRungArgs,
  type RungRevision,
  type WriteRungInput,
  type WrittenRung,
} from './ladder.js';
export {
  ladderTree,
  LADDER_TREE_CURSOR_MAX,
  type LadderTreeArgs,
  type LadderTreePage,
  type TreeRung,
} from './ladder-tree.js';
export {
  ladderReindex,
  ladderSearch,
  type LadderReindexResult,
  type LadderSearchArgs,
  type LadderSearchPage,
  type SearchServices,
  type StaleSearchHit,
} from './ladder-search.js';
export {
  applyLadderOp,
  ladderCodec,
  pathsOfOp,
  rungPlacementProblem,
  type LadderBuildArgs,
  type LadderState,
  type LadderWriteArgs,
  type RungRecord,
} from './ladder-state.js';
// search-sync.ts (LadderSearch wiring) is imported directly where needed: it loads minisearch
// and chokidar, which plain CLI calls must not pay for.
