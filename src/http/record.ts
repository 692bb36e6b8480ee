import type { RecordKey, UserRecord } from '../domain/storage/records';
import { ApiError, errors } from '../errors';
import { UNIQUE_ATTRIBUTES, type UniqueAttribute } from '../domain/users';
import type { RequestContext } from './context';
import { getPath, parsePath, parsePathList, pick } from '../domain/entity-attributes';
import { assertNoControl } from './params';

type Doc = Record<string, unknown>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ID = /^[1-9]\d{0,14}$/;

/** Whether the request names a record at all (uuid, id or key_attribute). */
export function namesRecord(ctx: RequestContext): boolean {
  return ['uuid', 'id', 'key_attribute'].some((k) => ctx.params.get(k) !== undefined);
}

/**
 * The key of the record a request names (docs/api.md#access-endpoints): `uuid`, `id`, or (when `byKeyAttribute`)
 * `key_attribute` and `key_value` over a unique attribute; a string key_value is JSON-quoted
 * (`"ada@example.com"`), a number bare. Every failure names the argument at fault.
 */
export function recordKey(ctx: RequestContext, byKeyAttribute = true): { key: RecordKey; attribute: UniqueAttribute; argument: string; text: string } {
  const p = ctx.params;
  const ways = byKeyAttribute ? ['uuid', 'id', 'key_attribute'] : ['uuid', 'id'];
  const given = ways.filter((k) => p.get(k) !== undefined);
  if (given.length === 0) {
    const how = byKeyAttribute ? 'uuid, id, or key_attribute and key_value' : 'id or uuid';
    throw new ApiError('missingArgument', `missing required argument: identify the record with ${how}`, {
      extra: { argument_name: byKeyAttribute ? 'uuid' : 'id' },
    });
  }
  if (given.length > 1) throw errors.invalidArgument(given[1], `identify the record one way only: ${given.join(' and ')} were both sent`);

  let attribute: UniqueAttribute;
  let value: unknown;
  let argument = given[0];
  if (argument === 'uuid' || argument === 'id') {
    attribute = argument;
    value = argument === 'id' ? p.get('id') : p.get('uuid');
  } else {
    const name = p.require('key_attribute');
    if (!(UNIQUE_ATTRIBUTES as readonly string[]).includes(name)) {
      throw errors.invalidArgument('key_attribute', `"${name.slice(0, 64)}" is not a unique attribute; use one of ${UNIQUE_ATTRIBUTES.join(', ')}`);
    }
    attribute = name as UniqueAttribute;
    argument = 'key_value';
    const raw = p.require('key_value');
    try {
      value = JSON.parse(raw);
    } catch {
      throw errors.invalidArgument('key_value', `a string key_value must be JSON-quoted, such as ${JSON.stringify(JSON.stringify(raw.slice(0, 40)))}`);
    }
    if (attribute === 'id' ? typeof value !== 'number' : typeof value !== 'string') {
      throw errors.invalidArgument('key_value', attribute === 'id' ? 'an id is a bare number, such as 42' : `${attribute} is a string: JSON-quote it, such as "ada@example.com"`);
    }
    value = String(value);
    // JSON escapes (\u0000) reach here decoded, past the check on the raw parameters
    assertNoControl('key_value', value as string);
  }

  const text = value as string;
  if (attribute === 'uuid' && !UUID.test(text)) throw errors.invalidArgument(argument, 'is not a uuid');
  if (attribute === 'id' && !ID.test(text)) throw errors.invalidArgument(argument, 'is not a record id (a positive whole number)');
  const key = attribute === 'id' ? { id: Number(text) } : attribute === 'uuid' ? { uuid: text } : attribute === 'email' ? { email: text } : { username: text };
  return { key, attribute, argument, text };
}

/** Finds the record a request names (see recordKey); 310 when no record has that key. */
export async function identifyRecord(ctx: RequestContext): Promise<UserRecord> {
  const { key, attribute, argument, text } = recordKey(ctx);
  const record = await ctx.services.db.records.find(ctx.app.id, key);
  if (!record) throw recordNotFound(attribute, text, argument);
  return record;
}

/** 310 naming the argument: no record has this key. */
export const recordNotFound = (attribute: string, text: string, argument: string) =>
  new ApiError('recordNotFound', `no user record has ${attribute} ${JSON.stringify(text.slice(0, 254))}`, { extra: { argument_name: argument } });

/** The `attributes` and `attribute_name` of /entity, applied to a rendered record. */
export function shape(ctx: RequestContext, rendered: Doc): unknown {
  const name = ctx.params.get('attribute_name');
  if (name !== undefined) {
    const value = getPath(rendered, parsePath(name));
    if (value === undefined) throw errors.invalidArgument('attribute_name', `the record has no attribute ${name.slice(0, 64)}`);
    return value;
  }
  return ctx.params.get('attributes') === undefined ? rendered : pick(rendered, parsePathList(ctx.params.json('attributes')));
}
