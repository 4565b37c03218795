// The environment zz hands to a program it starts that is not zz (a model script, the browser
// opener): the caller's own, minus zz's secrets. ZZ_TOKEN is the agent's identity; a child
// that is not zz has no business holding it (a browser keeps its environment for every page
// and helper it starts). The one list of them: add a new zz secret here.
const ZZ_SECRETS = ['ZZ_TOKEN'] as const;

export function withoutZzSecrets(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const rest = { ...env };
  for (const name of ZZ_SECRETS) delete rest[name];
  return rest;
}
