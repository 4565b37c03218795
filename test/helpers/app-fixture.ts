import { initRepo, ZzRepo } from '../../src/core/index.js';
import { TokenStore } from '../../src/core/token-store.js';
import { createApp, type App } from '../../src/http/index.js';
import { registry } from '../../src/tools/index.js';
import { makeRepo } from './temp-repo.js';

// The daemon's routes in-process (app.fetch, no socket) over one real repository with its own
// token store: the setup the HTTP-level tests of a feature share.

export const APP_HOST = '127.0.0.1:7433';

export interface ToolReply {
  status: number;
  json: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface AppFixture {
  dir: string;
  repo: ZzRepo;
  tokens: TokenStore;
  app: App;
  /** Every line the app logged. */
  logs: string[];
  /** A bearer token for `actor`. */
  token(actor: string): Promise<string>;
  /** POSTs a tool call with `token`; the reply's JSON as the route sent it. */
  tool(name: string, body: unknown, token: string): Promise<ToolReply>;
  /** Flushes the token store, closes the repo and removes the checkout. */
  close(): Promise<void>;
}

export async function appFixture(key: string, owner = 'owner@example.com'): Promise<AppFixture> {
  const { dir, cleanup } = makeRepo();
  const repo = await ZzRepo.open(dir, { key });
  await initRepo(repo, { owner, default_branch: 'main' });
  const tokens = new TokenStore(repo.git!.gitdir);
  const logs: string[] = [];
  const app = createApp({
    repos: new Map([[repo.key, repo]]),
    tokens,
    registry,
    host: APP_HOST,
    log: (l) => logs.push(l),
  });
  return {
    dir,
    repo,
    tokens,
    app,
    logs,
    token: async (actor) => (await tokens.create(actor, 'login')).token,
    async tool(name, body, token) {
      const res = await app.fetch(
        new Request(`http://${APP_HOST}/api/repos/${key}/tools/${name}`, {
          method: 'POST',
          headers: {
            host: APP_HOST,
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify(body),
        }),
      );
      return { status: res.status, json: (await res.json()) as ToolReply['json'] };
    },
    async close() {
      await tokens.flush();
      repo.close();
      cleanup();
    },
  };
}
