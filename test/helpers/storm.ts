// How many times a storm of random SIGKILLs ("N random SIGKILLs ..." tests) repeats its
// scenario. Each kill lands at a moment drawn from testSeed (the clock, unless ZZ_SEED is set),
// so no two runs of the suite kill at the same moments: the default run explores a sample of
// the interleavings, and the runs of every branch and CI together explore many times what one
// run does. The scenarios themselves (what is killed, beside what, and what is checked after
// every kill) are the same at either count. ZZ_STORMS=full runs the longer storms these tests
// ran before 3 December (when CI took 12-14 minutes): do that after changing the write path,
// the pack writer or the lock, and to reproduce a failure with its seed (ZZ_SEED).

/** `quick` kills by default; `full` with ZZ_STORMS=full. */
export function stormKills(quick: number, full: number): number {
  return process.env.ZZ_STORMS === 'full' ? full : quick;
}
