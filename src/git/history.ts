// The read paths over the user's history, one file each: git_log, git_diff, git_show_file.
export * from './diff.js';
export * from './history-common.js';
export * from './log.js';
export * from './show-file.js';
