import { openRepository } from '../../src/git/index.js';
import { GitStore, MemoryStore } from '../../src/store/index.js';
import { fsck, makeRepo } from '../helpers/temp-repo.js';
import { storeContract } from './store-contract.js';

storeContract('memory', async () => ({ store: new MemoryStore(), cleanup: () => {} }));

storeContract('git', async () => {
  const { dir, cleanup } = makeRepo();
  const repo = await openRepository(dir);
  const store = new GitStore(repo);
  return {
    store,
    cleanup: () => {
      store.close();
      // Every test leaves a repository that native git finds sound.
      fsck(dir);
      cleanup();
    },
  };
});
