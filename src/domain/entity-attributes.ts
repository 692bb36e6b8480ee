import { invalidField } from './refusal';

/**
 * Attribute paths of the entity API: `email`, `/email`, `primaryAddress.country` or
 * `/primaryAddress/country` all name a value inside a record. Segments are attribute names
 * (letters, digits and _), at most 8 deep.
 */
export function parsePath(raw: string, field = 'attributeName'): string[] {
  const segments = raw.replace(/^\//, '').split(/[./]/);
  // an attribute's name starts with a letter; `__proto__` is never a member, at any depth
  if (segments.length > 8 || !/^[A-Za-z]/.test(segments[0]) || segments.some((s) => !/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(s) || s === '__proto__')) {
    throw invalidField(field, `"${raw.slice(0, 64)}" is not an attribute path such as email or primaryAddress.country`);
  }
  return segments;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The value at `path`, or undefined. */
export function getPath(doc: Json, path: string[]): unknown {
  let v: unknown = doc;
  for (const s of path) {
    if (!isObject(v) || !Object.hasOwn(v, s)) return undefined;
    v = v[s];
  }
  return v;
}

/** A copy of `doc` with `value` at `path` (objects created on the way; `undefined` removes it). */
export function setPath(doc: Json, path: string[], value: unknown): Json {
  const [head, ...rest] = path;
  const copy: Json = { ...doc };
  if (rest.length === 0) {
    if (value === undefined) delete copy[head];
    else copy[head] = value;
    return copy;
  }
  const inner = isObject(doc[head]) ? doc[head] as Json : {};
  copy[head] = setPath(inner, rest, value);
  return copy;
}

/** `update`'s merge: objects merge member by member, anything else (lists included) replaces. */
export function deepMerge(base: Json, change: Json): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(change)) out[k] = isObject(v) && isObject(base[k]) ? deepMerge(base[k] as Json, v) : v;
  return out;
}

/** Only the named paths of a rendered record (`attributes` of /entity and entity.find). */
export function pick(doc: Json, paths: string[][]): Json {
  let out: Json = {};
  for (const path of paths) {
    const v = getPath(doc, path);
    if (v !== undefined) out = setPath(out, path, v);
  }
  return out;
}

/** The `attributes` parameter: a JSON list of attribute paths. */
export function parsePathList(raw: unknown, field = 'attributes'): string[][] {
  if (!Array.isArray(raw) || raw.length > 200 || raw.some((p) => typeof p !== 'string')) {
    throw invalidField(field, 'must be a JSON list of attribute paths, such as ["email","primaryAddress.country"]');
  }
  return (raw as string[]).map((p) => parsePath(p, field));
}
