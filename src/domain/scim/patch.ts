import { FilterSyntaxError, isObject, keyOf, matches, parsePatchPath, type Filter } from './filter';
import { definitionOf, SCHEMA } from './schemas';

/**
 * SCIM PATCH (RFC 7644 §3.5.2) applied to a resource as JSON: add, replace and remove, with or
 * without a path, paths of a sub-attribute (`name.givenName`), of an extension's attribute
 * (`urn:…:enterprise:2.0:User:department`) and of the values a filter selects
 * (`emails[type eq "work"].value`, `members[value eq "…"]`). What the providers send is read as
 * they send it: the operation's name in any case (Entra ID's "Replace"), a path-less value whose
 * keys are paths (`{"name.givenName": "Ada"}`), a remove of `members` naming the members in its
 * value. The result is read against the schemas afterwards (src/domain/scim/schemas.ts).
 */

export type PatchErrorType = 'invalidSyntax' | 'invalidPath' | 'noTarget' | 'invalidValue' | 'mutability';

export class ScimPatchError extends Error {
  constructor(readonly scimType: PatchErrorType, message: string) {
    super(message);
  }
}

/** The most operations one PATCH holds. */
export const MAX_OPERATIONS = 1000;

type Json = Record<string, unknown>;

/** The attributes a filter of only `and`ed `eq`s says a value has (`type eq "work"` → {type: "work"}): what a new value is made of when none matched. */
function seedOf(filter: Filter): Json | undefined {
  if (filter.op === 'and') {
    const left = seedOf(filter.left);
    const right = seedOf(filter.right);
    return left && right ? { ...left, ...right } : undefined;
  }
  if (filter.op === 'eq' && filter.path.sub === undefined && filter.path.schema === undefined && filter.value !== null) return { [filter.path.attr]: filter.value };
  return undefined;
}

/** `value`'s attributes written into `target`, each over the one of its name in any case. */
function mergeInto(target: Json, value: Json): Json {
  for (const [k, v] of Object.entries(value)) target[keyOf(target, k) ?? k] = v;
  return target;
}

function clone<T>(v: T): T {
  return v === undefined ? v : JSON.parse(JSON.stringify(v)) as T;
}

/** Applies `operations` to a copy of `resource` (a User or a Group as JSON); answers the copy. */
export function applyPatch(resource: Json, body: unknown, kind: 'user' | 'group'): Json {
  if (!isObject(body)) throw new ScimPatchError('invalidSyntax', 'the body must be a PatchOp message: {"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[…]}');
  const schemasKey = keyOf(body, 'schemas');
  const schemas = schemasKey === undefined ? undefined : body[schemasKey];
  if (!Array.isArray(schemas) || !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === SCHEMA.patchOp.toLowerCase())) {
    throw new ScimPatchError('invalidSyntax', `schemas must name ${SCHEMA.patchOp}`);
  }
  const opsKey = keyOf(body, 'Operations');
  const operations = opsKey === undefined ? undefined : body[opsKey];
  if (!Array.isArray(operations) || operations.length === 0) throw new ScimPatchError('invalidSyntax', 'Operations must be a list of one or more operations');
  if (operations.length > MAX_OPERATIONS) throw new ScimPatchError('invalidSyntax', `Operations holds more than ${MAX_OPERATIONS} operations`);
  const out = clone(resource);
  operations.forEach((operation, i) => {
    if (!isObject(operation)) throw new ScimPatchError('invalidSyntax', `Operations[${i}] is not an object`);
    const opKey = keyOf(operation, 'op');
    const name = typeof operation[opKey ?? 'op'] === 'string' ? (operation[opKey!] as string).toLowerCase() : undefined;
    if (name !== 'add' && name !== 'replace' && name !== 'remove') throw new ScimPatchError('invalidSyntax', `Operations[${i}].op must be add, replace or remove`);
    const pathKey = keyOf(operation, 'path');
    const path = pathKey === undefined ? undefined : operation[pathKey];
    const valueKey = keyOf(operation, 'value');
    const value = valueKey === undefined ? undefined : operation[valueKey];
    if (path !== undefined && path !== null && (typeof path !== 'string' || path.trim() === '')) throw new ScimPatchError('invalidPath', `Operations[${i}].path must be a string`);
    if (typeof path === 'string' && path.trim() !== '') {
      if (name !== 'remove' && value === undefined) throw new ScimPatchError('invalidValue', `Operations[${i}] has no value to ${name}`);
      applyAt(out, name, path.trim(), value, kind);
      return;
    }
    if (name === 'remove') throw new ScimPatchError('noTarget', `Operations[${i}] removes without a path: name what to remove`);
    if (!isObject(value)) throw new ScimPatchError('invalidValue', `Operations[${i}] has no path, so its value must be an object of attributes`);
    for (const [k, v] of Object.entries(value)) {
      if (k.toLowerCase() === 'schemas') continue;
      if (/^urn:/i.test(k) && k.toLowerCase() === SCHEMA.enterprise.toLowerCase()) {
        if (!isObject(v)) throw new ScimPatchError('invalidValue', `${k} must be an object`);
        for (const [ek, ev] of Object.entries(v)) applyAt(out, name, `${SCHEMA.enterprise}:${ek}`, ev, kind, true);
        continue;
      }
      applyAt(out, name, k, v, kind, true);
    }
  });
  return out;
}

function applyAt(resource: Json, op: 'add' | 'replace' | 'remove', text: string, value: unknown, kind: 'user' | 'group', pathless = false): void {
  let parsed;
  try {
    parsed = parsePatchPath(text);
  } catch (e) {
    if (e instanceof FilterSyntaxError) throw new ScimPatchError('invalidPath', `${JSON.stringify(text.slice(0, 120))} is not a path: ${e.message}`);
    throw e;
  }
  const { path, filter, sub } = parsed;
  const isEnterprise = path.schema !== undefined && path.schema === SCHEMA.enterprise.toLowerCase();
  if (path.schema !== undefined && !isEnterprise && path.schema !== (kind === 'user' ? SCHEMA.user : SCHEMA.group).toLowerCase()) {
    throw new ScimPatchError('invalidPath', `${JSON.stringify(text.slice(0, 120))} names a schema this resource does not have`);
  }
  if (kind === 'group' && isEnterprise) throw new ScimPatchError('invalidPath', 'a group has no enterprise extension');
  const def = definitionOf(kind, path.attr, isEnterprise ? SCHEMA.enterprise : undefined);
  if (!def) {
    // readOnly attributes a path-less value repeats (id, meta) are left as they are
    if (pathless && ['id', 'meta'].includes(path.attr)) return;
    throw new ScimPatchError('invalidPath', `${JSON.stringify(text.slice(0, 120))} names no attribute of the ${kind === 'user' ? 'User' : 'Group'} schema`);
  }
  if (def.mutability === 'readOnly' || def.name === 'id') {
    if (pathless) return;
    throw new ScimPatchError('mutability', `${def.name} is read-only`);
  }
  let holder: Json = resource;
  if (isEnterprise) {
    const ek = keyOf(resource, SCHEMA.enterprise) ?? SCHEMA.enterprise;
    if (!isObject(resource[ek])) resource[ek] = {};
    holder = resource[ek] as Json;
  }
  const key = keyOf(holder, def.name) ?? def.name;
  const subName = (name: string) => def.subAttributes?.find((s) => s.name.toLowerCase() === name)?.name;

  if (filter) {
    if (!def.multiValued) throw new ScimPatchError('invalidPath', `${def.name} has one value: a filter [ ] selects among the values of a multi-valued attribute`);
    const list = Array.isArray(holder[key]) ? holder[key] as unknown[] : [];
    let matched = list.filter((v): v is Json => isObject(v) && matches(filter, v, { core: '', extensions: [] }));
    const target = sub === undefined ? undefined : subName(sub);
    if (sub !== undefined && !target) throw new ScimPatchError('invalidPath', `${def.name} has no sub-attribute ${sub}`);
    if (op === 'remove') {
      if (target) for (const m of matched) delete m[keyOf(m, target) ?? target];
      else holder[key] = list.filter((v) => !matched.includes(v as Json));
      return;
    }
    if (matched.length === 0) {
      const seed = seedOf(filter);
      if (!seed) throw new ScimPatchError('noTarget', `no value of ${def.name} matches the filter of ${JSON.stringify(text.slice(0, 120))}`);
      const made: Json = Object.fromEntries(Object.entries(seed).map(([k, v]) => [subName(k) ?? k, v]));
      list.push(made);
      matched = [made];
    }
    for (const m of matched) {
      if (target) m[keyOf(m, target) ?? target] = value;
      else if (isObject(value)) {
        if (op === 'replace') for (const k of Object.keys(m)) delete m[k];
        mergeInto(m, value);
      } else throw new ScimPatchError('invalidValue', `a value of ${def.name} must be an object`);
    }
    holder[key] = list;
    return;
  }

  if (path.sub !== undefined) {
    const target = subName(path.sub);
    if (!target || def.multiValued) throw new ScimPatchError('invalidPath', `${JSON.stringify(text.slice(0, 120))} names no sub-attribute of ${def.name}`);
    const inner = isObject(holder[key]) ? holder[key] as Json : {};
    const ik = keyOf(inner, target) ?? target;
    if (op === 'remove') delete inner[ik];
    else inner[ik] = value;
    holder[key] = inner;
    return;
  }

  if (op === 'remove') {
    if (def.multiValued && value !== undefined && value !== null) {
      // remove these values (Entra ID: {"op":"Remove","path":"members","value":[{"value":"…"}]})
      const gone = (Array.isArray(value) ? value : [value]).map((v) => (isObject(v) ? v[keyOf(v, 'value') ?? 'value'] : v));
      const list = Array.isArray(holder[key]) ? holder[key] as unknown[] : [];
      holder[key] = list.filter((v) => !(isObject(v) && gone.some((g) => g !== undefined && String(g).toLowerCase() === String(v[keyOf(v, 'value') ?? 'value']).toLowerCase())));
      return;
    }
    delete holder[key];
    return;
  }
  if (def.multiValued) {
    const given = Array.isArray(value) ? value : [value];
    holder[key] = op === 'add' && Array.isArray(holder[key]) ? [...holder[key] as unknown[], ...given] : given;
    return;
  }
  if (def.type === 'complex' && isObject(value)) {
    // sub-attributes not given stay as they were (RFC 7644 §3.5.2.3), for add and replace alike
    holder[key] = mergeInto(isObject(holder[key]) ? holder[key] as Json : {}, value);
    return;
  }
  holder[key] = value;
}
