import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors.js';
import { EVENTS_CURSOR_MAX_LENGTH } from '../../src/core/index.js';
import { registry } from '../../src/tools/index.js';
import { jsonClient, type HttpReply, type JsonClient } from '../helpers/http-client.js';
import {
  encode,
  encodingArb,
  mutate,
  mutationArb,
  objectArb,
  pastLimitArb,
  resolvePicks,
  type Encoding,
  type JsonSchema,
  type Mutation,
  type Pools,
} from '../helpers/fuzz-args.js';
import { storedProblems } from '../helpers/stored-bounds.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';
import { newClient, textOf } from '../mcp/helpers.js';

// Every tool the daemon lists, called over real HTTP on loopback (a `zz serve` daemon over a
// real git repository, test-daemon.ts) with arguments derived from the tool's published input
// schema and then mutated (test/helpers/fuzz-args.ts): wrong types, missing and extra fields,
// strings empty or past every bound, control characters, NUL, bidi, lone surrogates, bytes
// that are not UTF-8, deep nesting, numbers past every bound, ids of the right shape naming
// nothing, traversal in paths and refs, duplicate keys, bodies that are not JSON, wrong
// Content-Type, long headers; by the owner, a narrow agent (no roles), a revoked token, no
// token and a malformed Authorization. After each call:
//   - no 5xx, no hang; every error is {error, code} with the status ERROR_CODES gives the code;
//   - a refused call (and an accepted read) leaves `git for-each-ref` exactly as it was;
//   - a token that is revoked, missing or malformed never gets a 200;
//   - what an accepted write stored (new commits' messages and blobs) is within STORED_LIMITS;
//   - the daemon still answers /healthz and a Lane read.
// After the run, `git fsck --strict` finds nothing and no traversal wrote outside the repo.
//
// Default: 25 rounds of one case per tool (~1,000 calls, ~35 s CPU on two cores). ZZ_FUZZ=full
// runs ten times as many; ZZ_FUZZ_ROUNDS=<n> any number. The seed is printed; replay a failure with
// ZZ_SEED=<seed> npx vitest run test/http/fuzz-tools.test.ts (the daemon's state comes from the
// earlier cases of the same seed, so replay the whole run, not one case). ZZ_FUZZ_TOOLS=a,b
// fuzzes only those tools; ZZ_FUZZ_DEBUG=1 prints each well-formed call and its answer.
// The MCP leg sends the same generated, mutated arguments to ten tools through the daemon's
// MCP endpoint: a tool error each time, never a broken session.

const SEED = process.env.ZZ_SEED ? Number(process.env.ZZ_SEED) : Date.now() % 2 ** 31;
const FULL = process.env.ZZ_FUZZ === 'full';
const ROUNDS = Number(process.env.ZZ_FUZZ_ROUNDS ?? (FULL ? 250 : 25));
/** A call that takes longer than this is a hang (lane_events' wait is clamped far below it). */
const HANG_MS = 20_000;
const OWNER = 'owner@example.com';
const AGENT = 'owner@example.com[fuzz]';
const ALICE = 'alice@example.com';
const REVOKED = 'carol@example.com';
const PWNED = '/tmp/zz-fuzz-pwned';

type CallerKind = 'owner' | 'agent' | 'revoked' | 'none' | 'malformed';
type HeaderKind = 'plain' | 'long' | 'over_limit' | 'wrong_host' | 'cross_origin';

interface Case {
  tool: string;
  caller: CallerKind;
  args: Record<string, unknown>;
  mutations: readonly Mutation[];
  encoding: Encoding;
  contentType: string | null;
  headers: HeaderKind;
  method: string;
  /** Aim at an Ask the caller holds now (answers, releases, rungs need one; see holdAsks). */
  held: boolean;
}

interface ListedTool {
  name: string;
  local: boolean;
  annotations: { readOnlyHint: boolean };
  input_schema: JsonSchema;
}

let t: TestDaemon;
let http: JsonClient;
let tools: ListedTool[];
const tok: Record<'owner' | 'agent' | 'revoked', string> = { owner: '', agent: '', revoked: '' };
let pools: Pools;
/** The checkout's HEAD commit. */
let head = '';
const calls = new Map<string, { n: number; ok: number }>();

const git = (...args: string[]) =>
  execFileSync('git', args, { cwd: t.dir, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
const refs = () => git('for-each-ref', '--format=%(objectname) %(refname)');
const toolPath = (name: string) => `/api/repos/${t.key}/tools/${name}`;

/** An OpenSSH public key line for key_add (ed25519: the last 32 bytes of the SPKI DER). */
function sshKey(): string {
  const der = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });
  const field = (b: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    return Buffer.concat([len, b]);
  };
  const blob = Buffer.concat([field(Buffer.from('ssh-ed25519')), field(der.subarray(-32))]);
  return `ssh-ed25519 ${blob.toString('base64')} fuzz@host`;
}

async function as(token: string, tool: string, args: unknown): Promise<HttpReply> {
  const r = await http.post(toolPath(tool), args, token);
  expect(r.status, `${tool}: ${r.text.slice(0, 300)}`).toBe(200);
  return r;
}

beforeAll(async () => {
  t = await startTestDaemon({ prefix: 'zz-fuzz-', daemon: { sync: false, mcpHandler: undefined } });
  tok.owner = await t.token(OWNER);
  tok.agent = await t.token(AGENT, 'fuzz');
  tok.revoked = await t.token(REVOKED);
  await t.daemon.tokens.revoke(REVOKED);
  http = jsonClient(t.url);
  tools = (await http.get('/api/tools', null)).json.tools;
  // A Lane with Asks in each state: open, held by the agent, answered.
  await as(tok.owner, 'lane_propose', { lane_id: 'fz', title: 'Fuzz' });
  await as(tok.owner, 'lane_propose', { lane_id: heldLane, title: 'Held' });
  const post = async (title: string) =>
    (await as(tok.owner, 'ask_post', { lane_id: 'fz', kind: 'work', title })).json.result.ask
      .ask_id as string;
  const open = await post('open');
  const held = await post('held');
  const done = await post('done');
  await as(tok.agent, 'ask_claim', { lane_id: 'fz', ask_id: held });
  await as(tok.owner, 'ask_claim', { lane_id: 'fz', ask_id: done });
  await as(tok.owner, 'ask_answer', {
    lane_id: 'fz',
    ask_id: done,
    outcome: 'complete',
    result: 'ok',
  });
  // A ladder_update the owner holds, so that ladder_write_rung may be accepted.
  const ladder = (
    await as(tok.owner, 'ask_post', { lane_id: '_repo', kind: 'ladder_update', title: 'rungs' })
  ).json.result.ask.ask_id as string;
  await as(tok.owner, 'ask_claim', { lane_id: '_repo', ask_id: ladder, lease_seconds: 604800 });
  head = git('rev-parse', 'HEAD').trim();
  const askIds = [open, held, done, ladder, 'ask-0000000000'];
  const lanes = ['fz', '_repo', 'no-such-lane'];
  const actors = [OWNER, AGENT, ALICE];
  const revs = [head, 'main', 'HEAD', 'cafe'.repeat(10)];
  const paths = ['README.md', '_repo', 'src', 'no/such/file'];
  const changesets = ['cs-0000000000'];
  pools = {
    lane_id: lanes,
    related_lane_id: lanes,
    related_lanes: lanes,
    ask_id: askIds,
    depends_on: askIds,
    exclude: askIds,
    changeset_id: changesets,
    actor: actors,
    grantee: actors,
    commit: revs,
    base: [head],
    ref: revs,
    path: paths,
    paths,
    under: paths,
    key: [sshKey()],
    kind: ['work', 'ladder_update', 'changeset_review'],
    wait_ms: [0, 50],
  };
}, 60_000);

afterAll(async () => {
  http?.close();
  await t?.close();
});

const callerArb = fc.constantFrom<CallerKind>(
  'owner',
  'owner',
  'owner',
  'agent',
  'agent',
  'revoked',
  'none',
  'malformed',
);
const contentTypeArb = fc.oneof(
  { weight: 10, arbitrary: fc.constant('application/json') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      null,
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=latin1',
      'application/vnd.api+json',
      'APPLICATION/JSON',
      'application/jsonx',
    ),
  },
);
const headerArb = fc.oneof(
  { weight: 16, arbitrary: fc.constant<HeaderKind>('plain') },
  {
    weight: 1,
    arbitrary: fc.constantFrom<HeaderKind>('long', 'over_limit', 'wrong_host', 'cross_origin'),
  },
);
const methodArb = fc.oneof(
  { weight: 30, arbitrary: fc.constant('POST') },
  { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE') },
);

/**
 * A third of the cases are well-formed calls by the owner or the agent (so that writes are
 * accepted and the state grows), a third the same with one field made hostile, a third hostile
 * in any of the ways above.
 */
function caseArb(tool: ListedTool): fc.Arbitrary<Case> {
  const clean = fc.record({
    tool: fc.constant(tool.name),
    caller: fc.constantFrom<CallerKind>('owner', 'owner', 'agent'),
    args: objectArb(tool.input_schema, pools, true),
    mutations: fc.constant([]),
    encoding: fc.constant<Encoding>({ e: 'json' }),
    contentType: fc.constant('application/json'),
    headers: fc.constant<HeaderKind>('plain'),
    method: fc.constant('POST'),
    held: fc.boolean(),
  });
  const hostile = fc.record({
    tool: fc.constant(tool.name),
    caller: callerArb,
    args: objectArb(tool.input_schema, pools),
    mutations: fc.array(mutationArb, { minLength: 0, maxLength: 3 }),
    encoding: encodingArb,
    contentType: contentTypeArb,
    headers: headerArb,
    method: methodArb,
    held: fc.boolean(),
  });
  // A well-formed call with one of its fields (present or not) set to a hostile value, most
  // often a string just past a bound: the way a bad value reaches a call that is otherwise
  // accepted, and so the store.
  const fields = Object.keys(tool.input_schema.properties ?? {});
  const oneBad = fields.length
    ? fc
        .tuple(clean, fc.constantFrom(...fields), pastLimitArb)
        .map(([c, key, value]): Case => ({ ...c, mutations: [{ m: 'extra', key, value }] }))
    : clean;
  return fc.oneof(clean, oneBad, hostile);
}

/** Tools that act on an Ask the caller holds: a case with `held` names the caller's. */
const HOLDER_TOOLS = new Set([
  'ask_answer',
  'ask_release',
  'ask_cancel',
  'ask_get',
  'commit_changeset',
  'ladder_write_rung',
]);
type Held = { work: [string, string]; ladder: [string, string] };
const heldAsks: { owner: Held | null; agent: Held | null } = { owner: null, agent: null };
let heldLane = 'fz-held';
let heldLanes = 0;

/**
 * Before each round, an Ask each caller holds (a work Ask in a Lane of the owner's; for the
 * owner also a ladder_update in _repo): the earlier cases answered or released the last ones,
 * and without one every answer and rung write would be refused before its values are read.
 */
async function holdAsks(): Promise<void> {
  const hold = async (token: string, lane: string, kind: string): Promise<string | null> => {
    const posted = await http.post(
      toolPath('ask_post'),
      { lane_id: lane, kind, title: kind },
      token,
    );
    if (posted.status !== 200) return null;
    const id = posted.json.result.ask.ask_id as string;
    const claimed = await http.post(toolPath('ask_claim'), { lane_id: lane, ask_id: id }, token);
    return claimed.status === 200 ? id : null;
  };
  let owner = await hold(tok.owner, heldLane, 'work');
  if (owner === null) {
    // A case closed the Lane (its id is in the pools once a lane_list answered it): a new one.
    heldLane = `fz-held-${++heldLanes}`;
    await as(tok.owner, 'lane_propose', { lane_id: heldLane, title: 'Held' });
    owner = await hold(tok.owner, heldLane, 'work');
  }
  const agent = await hold(tok.agent, heldLane, 'work');
  const ladder = await hold(tok.owner, '_repo', 'ladder_update');
  heldAsks.owner = owner && ladder ? { work: [heldLane, owner], ladder: ['_repo', ladder] } : null;
  heldAsks.agent = agent ? { work: [heldLane, agent], ladder: ['_repo', agent] } : null;
}

/** The case's arguments, kept from undoing the fixture for the cases after it. */
function argsOf(c: Case): Record<string, unknown> {
  const args = resolvePicks(c.args, pools) as Record<string, unknown>;
  // Aimed at the caller's own Ask before the mutations, which may still spoil any of it.
  const mine = c.caller === 'owner' || c.caller === 'agent' ? heldAsks[c.caller] : null;
  if (c.held && mine && HOLDER_TOOLS.has(c.tool)) {
    const [lane, ask] = c.tool === 'ladder_write_rung' ? mine.ladder : mine.work;
    if ('ask_id' in args) args.ask_id = ask;
    if ('lane_id' in args) args.lane_id = lane;
    // A rung's path must suit its kind and name a file of a commit: what the schema cannot say
    // (the checkout has one file).
    const first: unknown = Array.isArray(args.rungs) ? args.rungs[0] : undefined;
    if (first && typeof first === 'object')
      args.rungs = [{ ...first, path: 'README.md', kind: 'file', commit: head }];
  }
  const out = mutate(args, c.mutations);
  // A long-poll waits out wait_ms when nothing moves: keep each case short.
  if (c.tool === 'lane_events' && typeof out.wait_ms === 'number' && out.wait_ms > 200)
    out.wait_ms = 200;
  // The owner stays an owner (another owner granted earlier could otherwise leave it none).
  if (c.tool === 'role_grant' && out.grantee === OWNER) out.grantee = ALICE;
  return out;
}

function headersOf(c: Case): Record<string, string> {
  const h: Record<string, string> = {};
  if (c.contentType !== null) h['content-type'] = c.contentType;
  if (c.caller === 'malformed') h.authorization = 'Bearer zzt_' + '\u00e9'.repeat(43);
  else if (c.caller !== 'none') h.authorization = `Bearer ${tok[c.caller]}`;
  if (c.headers === 'long') h['x-fuzz'] = 'a'.repeat(8 * 1024);
  if (c.headers === 'over_limit') h['x-fuzz'] = 'a'.repeat(EVENTS_CURSOR_MAX_LENGTH + 32 * 1024);
  if (c.headers === 'wrong_host') h.host = 'evil.example:80';
  if (c.headers === 'cross_origin') h.origin = 'http://evil.example';
  return h;
}

const describeCase = (c: Case, body: Buffer) =>
  `${c.method} ${c.tool} as ${c.caller} (${c.encoding.e}, ${c.contentType}, ${c.headers}): ${body
    .toString('utf8')
    .slice(0, 300)}${body.length > 300 ? `… (${body.length} bytes)` : ''}`;

async function send(c: Case, body: Buffer): Promise<HttpReply> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${HANG_MS} ms`)), HANG_MS);
  });
  try {
    return await Promise.race([
      http.send(c.method, toolPath(c.tool), c.method === 'GET' ? null : body, headersOf(c)),
      hang,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Ids an accepted call answered with join the pools, so that later cases name them. */
function harvest(value: unknown, key = ''): void {
  if (typeof value === 'string') {
    const pool =
      key === 'ask_id'
        ? pools.ask_id
        : key === 'lane_id'
          ? pools.lane_id
          : key === 'changeset_id'
            ? pools.changeset_id
            : null;
    if (pool && !pool.includes(value)) {
      pool.push(value);
      if (pool.length > 200) pool.splice(1, 1); // keep the fixture's first one
    }
  } else if (Array.isArray(value)) {
    for (const v of value) harvest(v, key);
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) harvest(v, k);
  }
}

// --- one case ----------------------------------------------------------------------------

const listed = (name: string) => tools.find((x) => x.name === name)!;

async function runCase(c: Case): Promise<void> {
  const body = encode(argsOf(c), c.encoding);
  const what = describeCase(c, body);
  const before = refs();
  const r = await send(c, body);
  if (process.env.ZZ_FUZZ_DEBUG && c.mutations.length === 0 && c.encoding.e === 'json')
    console.log(r.status, what.slice(0, 200), r.text.slice(0, 200));
  const stat = calls.get(c.tool) ?? { n: 0, ok: 0 };
  calls.set(c.tool, { n: stat.n + 1, ok: stat.ok + (r.status === 200 ? 1 : 0) });
  expect(r.status, `5xx: ${what}\n→ ${r.text.slice(0, 300)}`).toBeLessThan(500);
  if (r.status === 200) {
    expect(r.json?.result, what).toBeTypeOf('object');
    expect(['owner', 'agent'], `a refused token got a 200: ${what}`).toContain(c.caller);
    harvest(r.json.result);
  } else {
    expect(r.status, what).toBeGreaterThanOrEqual(400);
    expect(r.json, `not the error shape: ${what}\n→ ${r.status} ${r.text.slice(0, 300)}`).toEqual(
      expect.objectContaining({ error: expect.any(String), code: expect.any(String) }),
    );
    expect(r.json.error.length, what).toBeGreaterThan(0);
    const code = r.json.code as keyof typeof ERROR_CODES;
    expect(Object.keys(ERROR_CODES), what).toContain(code);
    expect(r.status, `${code} with the wrong status: ${what}`).toBe(ERROR_CODES[code].status);
  }
  const after = refs();
  if (r.status !== 200 || listed(c.tool).annotations.readOnlyHint) {
    expect(after, `refs moved by a ${r.status} ${r.json?.code ?? ''}: ${what}`).toBe(before);
  } else if (after !== before) {
    expect(storedProblems(git, before), `unbounded value stored: ${what}`).toEqual([]);
  }
  // Still healthy: the process answers and a repository read works.
  await keepCallers();
  expect((await http.get('/healthz', null)).status, `unhealthy after ${what}`).toBe(200);
  const read = await http.post(toolPath('lane_get'), { lane_id: 'fz' }, tok.owner);
  expect(read.status, `a read failed after ${what}: ${read.text.slice(0, 200)}`).toBe(200);
}

/** Mints again a fixture token a case revoked (token_revoke may name the owner or the agent). */
async function keepCallers(): Promise<void> {
  if (!(await t.daemon.tokens.verify(tok.owner))) tok.owner = await t.token(OWNER);
  if (!(await t.daemon.tokens.verify(tok.agent))) tok.agent = await t.token(AGENT, 'fuzz');
}

/** Cases that found a defect, run first on every run (the fuzz's fixed examples). */
const FOUND: Case[] = [
  // Headers past node's maxHeaderSize: a bare "431" with no body (d29e48c).
  {
    tool: 'repo_state',
    caller: 'revoked',
    args: {},
    mutations: [],
    encoding: { e: 'json' },
    contentType: 'application/json',
    headers: 'over_limit',
    method: 'POST',
    held: false,
  },
];

describe(`every tool over HTTP, fuzzed (seed ${SEED}, ${ROUNDS} rounds)`, () => {
  it('no 5xx, the error shape, refused calls move no ref, stored values bounded, still healthy', async () => {
    console.log(`fuzz-tools: seed ${SEED} (replay with ZZ_SEED=${SEED})`);
    // What the daemon lists is the registry, whole: every tool of ALL_TOOLS is fuzzed.
    expect(tools.map((x) => x.name)).toEqual(registry.tools.map((x) => x.name));
    for (const c of FOUND) await runCase(c);
    // ZZ_FUZZ_TOOLS=a,b: only these tools (to chase one failure faster).
    const only = process.env.ZZ_FUZZ_TOOLS?.split(',');
    const fuzzed = only ? tools.filter((x) => only.includes(x.name)) : tools;
    const round = fc.tuple(...fuzzed.map(caseArb));
    await fc.assert(
      fc.asyncProperty(round, async (cases) => {
        await holdAsks();
        for (const c of cases) await runCase(c);
      }),
      // No shrinking: each case runs against the state the cases before it left, so a shrunk
      // round would not replay; the failing case's own message names its input.
      // The report is the failing case's own message (describeCase), not the whole round.
      {
        seed: SEED,
        numRuns: ROUNDS,
        endOnFailure: true,
        reporter: (run) => {
          if (run.failed)
            throw new Error(`seed ${SEED}: ${String(run.errorInstance)}`, {
              cause: run.errorInstance,
            });
        },
      },
    );
    // Every tool the daemon lists was called; most of them accepted something.
    expect([...calls.keys()]).toEqual(expect.arrayContaining(fuzzed.map((x) => x.name)));
    console.log(
      'fuzz-tools: calls (accepted/all):',
      [...calls].map(([k, v]) => `${k} ${v.ok}/${v.n}`).join(', '),
    );
    // Dangling objects are no fault: a write refused at its ref update leaves its commit behind.
    expect(git('fsck', '--strict', '--no-progress', '--no-dangling').trim()).toBe('');
    expect(existsSync(PWNED)).toBe(false);
  }, 600_000);
});

/** The tools the MCP leg calls: reads and writes, with ids, paths, refs and free text. */
const MCP_TOOLS = [
  'lane_propose',
  'lane_get',
  'ask_post',
  'ask_claim',
  'ask_answer',
  'git_show_file',
  'git_diff',
  'ladder_read',
  'ladder_write_rung',
  'key_add',
];

describe(`the same arguments through MCP (seed ${SEED})`, () => {
  it('a tool error (isError with a message), never a dead session; refused calls move no ref', async () => {
    const connect = async (token: string) => {
      const client = newClient();
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${t.url}/api/repos/${t.key}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      return client;
    };
    const clients = { owner: await connect(tok.owner), agent: await connect(tok.agent) };
    // MCP lists each caller the tools its roles allow now (cases grant and revoke roles); a
    // tool it does not list is a protocol error by design ("not found"), so it is not called.
    const offers = async (caller: 'owner' | 'agent', tool: string) =>
      (await clients[caller].listTools()).tools.some((x) => x.name === tool);
    try {
      const arb = fc.record({
        tool: fc.constantFrom(...MCP_TOOLS),
        caller: fc.constantFrom<'owner' | 'agent'>('owner', 'agent'),
        mutations: fc.array(mutationArb, { minLength: 0, maxLength: 3 }),
        seed: fc.nat(),
      });
      await fc.assert(
        fc.asyncProperty(arb, async ({ tool, caller, mutations, seed }) => {
          if (!(await offers(caller, tool))) return;
          // The arguments of the HTTP leg's generator for this tool, drawn with this case's seed.
          const [raw] = fc.sample(objectArb(listed(tool).input_schema, pools), {
            seed,
            numRuns: 1,
          });
          const args = mutate(resolvePicks(raw, pools) as Record<string, unknown>, mutations);
          // Past the body limit MCP answers a 413 to the whole request (body-limits.test.ts).
          if (JSON.stringify(args).length > 4 * 1024 * 1024) return;
          const what = `MCP ${tool} as ${caller}: ${JSON.stringify(args).slice(0, 300)}`;
          const before = refs();
          const r = await clients[caller].callTool({ name: tool, arguments: args });
          if (r.isError) {
            expect(textOf(r).length, what).toBeGreaterThan(0);
            expect(textOf(r), what).not.toMatch(/internal error/i);
            expect(refs(), `refs moved by a refused MCP call: ${what}`).toBe(before);
          } else if (refs() !== before) {
            expect(storedProblems(git, before), `unbounded value stored: ${what}`).toEqual([]);
          }
          // The session still serves a plain read.
          const read = await clients[caller].callTool({
            name: 'lane_get',
            arguments: { lane_id: 'fz' },
          });
          expect(read.isError, `the session broke after ${what}: ${textOf(read)}`).toBeFalsy();
        }),
        {
          seed: SEED,
          numRuns: FULL ? 600 : 60,
          endOnFailure: true,
          reporter: (run) => {
            if (run.failed)
              throw new Error(`seed ${SEED}: ${String(run.errorInstance)}`, {
                cause: run.errorInstance,
              });
          },
        },
      );
    } finally {
      await clients.owner.close();
      await clients.agent.close();
    }
  }, 300_000);
});
