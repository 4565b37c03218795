import { z } from 'zod';

// A tool's zod schema as the JSON Schema front ends publish (GET /api/tools, MCP tools/list).
// Nullable and union fields are written as `anyOf` of single types, never `"type": [a, b]`:
// the strictest common MCP clients (and the schema checkers they use) refuse type arrays.

export type JsonSchema = Record<string, unknown>;

export function toolJsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  let json: JsonSchema;
  try {
    json = z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io,
      unrepresentable: 'any',
    }) as JsonSchema;
  } catch {
    // A schema zod cannot express (a transform's output, say) is published as "anything".
    return {};
  }
  return typeArraysAsAnyOf(json) as JsonSchema;
}

/** Rewrites every `"type": [a, b]` as `"anyOf": [{type: a}, {type: b}]`, keeping the rest. */
export function typeArraysAsAnyOf(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(typeArraysAsAnyOf);
  if (!node || typeof node !== 'object') return node;
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(node)) {
    // `properties` maps field names (data) to schemas: a field may be called "type".
    if (k === 'properties' && v && typeof v === 'object' && !Array.isArray(v)) {
      out[k] = Object.fromEntries(
        Object.entries(v).map(([name, s]) => [name, typeArraysAsAnyOf(s)]),
      );
    } else if (k !== 'type' || !Array.isArray(v)) {
      out[k] = typeArraysAsAnyOf(v);
    }
  }
  const type = (node as JsonSchema).type;
  if (Array.isArray(type)) {
    const alts = type.map((t) => ({ type: t }));
    out.anyOf = Array.isArray(out.anyOf) ? [...(out.anyOf as unknown[]), ...alts] : alts;
  }
  return out;
}
