import { DuplicateAttributeError } from '../../domain/storage/records';
import { asClient } from '../../usecases/services';
import { BulkItemError, createRecord, createRecords } from '../../usecases/records/create-records';
import { shownRecord } from '../../usecases/records/change-record';
import { listIndexedAttributes } from '../../usecases/records/indexed-attributes';
import { parseNewUser, requireUserType } from '../../domain/users';
import { shape } from '../record';
import { ApiError, errors, refusalError } from '../../errors';
import { Refusal } from '../../domain/refusal';
import { caller, type Handler, type RequestContext } from '../context';
import { identifyRecord, namesRecord } from '../record';

/** Client kinds that read records with their credentials. */
const READERS = ['owner', 'direct_access', 'direct_read_access'];

/** A taken email, username or uuid: 202 naming the attribute. */
const taken = (e: DuplicateAttributeError) =>
  new ApiError('uniqueViolation', `another record already has this ${e.attribute}`, { extra: { argument_name: `attributes.${e.attribute}` } });

/**
 * /entity.create: owner credentials, or a `creation_token` (docs/api.md#records: for mobile apps without a
 * secret). A token issued with `for_client_id` works only when that client sends `client_id`.
 */
export const createEntity: Handler = async (ctx) => {
  requireUserType(ctx.params.require('type_name'));
  const record = parseNewUser(ctx.app.id, ctx.params.json('attributes', true));
  const creationToken = ctx.params.get('creation_token');
  // a hash from another system skips the password rules: the application's backend brings it, not a person registering
  if (record.hashed && creationToken !== undefined) {
    throw errors.invalidArgument('attributes.password', 'a password hash from another system is taken from owner client credentials only; with a creation_token send the password itself');
  }
  const p = ctx.principal;
  if (creationToken === undefined) {
    if (p.kind !== 'client' || p.scheme === 'client_id') {
      throw errors.invalidClientCredentials('send owner client credentials, or a creation_token');
    }
    if (!p.client.features.includes('owner')) throw errors.permissionError(`client ${p.client.clientId} needs the owner feature, or a creation_token`);
  }
  try {
    const created = await createRecord(ctx.services, {
      app: ctx.app, origin: ctx.origin, record, ...(p.kind === 'client' && { client: p.client }), ...(creationToken !== undefined && { creationToken }),
    });
    return { id: created.id, uuid: created.uuid };
  } catch (e) {
    if (e instanceof DuplicateAttributeError) throw taken(e);
    throw e;
  }
};

async function readable(ctx: RequestContext) {
  const p = ctx.principal;
  if (p.kind === 'entity') {
    if (!namesRecord(ctx)) {
      const own = p.token.entityId === null ? undefined : await ctx.services.db.records.find(ctx.app.id, { id: p.token.entityId });
      if (!own) throw errors.invalidAccessToken();
      return own;
    }
    const record = await identifyRecord(ctx);
    if (record.id !== p.token.entityId) throw errors.permissionError('the access token is for another record');
    return record;
  }
  if (p.kind !== 'client' || !READERS.some((k) => p.client.features.includes(k as never))) {
    throw errors.permissionError(`reading records needs the feature ${READERS.join(', ')} or an access token for the record`);
  }
  return identifyRecord(ctx);
}

/** /entity: one record, by uuid, id or key_attribute. */
export const readEntity: Handler = async (ctx) => {
  if (ctx.params.get('type_name') !== undefined) requireUserType(ctx.params.require('type_name'));
  return { result: shape(ctx, await shownRecord(ctx.services, await readable(ctx))) };
};

/** Records one bulkCreate call may create. */
const MAX_BULK = 1000;

/**
 * /entity.bulkCreate: `all_attributes`, a JSON list of new records, created in one transaction:
 * all or none. Every item is checked first; the answer names each failing item by its position.
 */
export const bulkCreateEntities: Handler = async (ctx) => {
  requireUserType(ctx.params.require('type_name'));
  const raw = ctx.params.json('all_attributes', true);
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_BULK) {
    throw errors.invalidArgument('all_attributes', `must be a JSON list of 1 to ${MAX_BULK} records, such as [{"email":"ada@example.com"}]`);
  }
  const parsed = raw.map((item, index) => {
    try {
      return { index, ...parseNewUser(ctx.app.id, item) };
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
      return { index, error: refusalError(e) };
    }
  });
  const failed = parsed.filter((p): p is { index: number; error: ApiError } => 'error' in p);
  if (failed.length > 0) {
    throw errors.invalidArgument('all_attributes', `${failed.length} of ${raw.length} records are not valid; nothing was created`, {
      item_errors: failed.map((f) => ({ index: f.index, argument_name: f.error.extra.argument_name, error_description: f.error.message })),
    });
  }
  const records = parsed as ({ index: number } & ReturnType<typeof parseNewUser>)[];
  try {
    const created = await createRecords(ctx.services, { app: ctx.app, acting: asClient(ctx, caller(ctx)), records });
    // hashes of older systems (a fast digest): imported, and said so
    const weak = records.flatMap((r) => (r.hashed?.weak ? [{ index: r.index, format: r.hashed.format }] : []));
    return { uuid_results: created.map((c) => c.uuid), results: created.map((c) => ({ id: c.id, uuid: c.uuid })), ...(weak.length > 0 && { weak_hashes: weak }) };
  } catch (e) {
    if (!(e instanceof BulkItemError)) throw e;
    throw new ApiError('uniqueViolation', `record ${e.index} of all_attributes has a ${e.duplicate.attribute} that another record has; nothing was created`, {
      extra: { argument_name: 'all_attributes', item_index: e.index },
    });
  }
};

/** /entityType: the attributes of the one entity type, `user` (read only). */
export const entityType: Handler = async (ctx) => {
  requireUserType(ctx.params.require('type_name'));
  const attr = (name: string, type: string, extra: Record<string, unknown> = {}) => ({ name, type, ...extra });
  const declared = (ctx.app.settings.time_attributes ?? '').split(',').map((n) => n.trim()).filter((n) => /^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(n));
  // the attributes an operator indexed (docs/entity-filters.md#indexed-attributes): marked, and any other listed after
  const indexes = await listIndexedAttributes(ctx.services, { applicationId: ctx.app.id });
  const indexed = new Map(indexes.map((a) => [a.name, { indexed: a.state }]));
  const mark = (def: { name: string } & Record<string, unknown>) => ({ ...def, ...indexed.get(def.name) });
  const defs = [
    attr('id', 'id', { read_only: true }), attr('uuid', 'uuid', { read_only: true }),
        attr('created', 'dateTime', { read_only: true }), attr('lastUpdated', 'dateTime', { read_only: true }),
        attr('email', 'string', { constraints: ['unique'], length: 254 }), attr('username', 'string', { constraints: ['unique'], length: 191 }),
        attr('password', 'password'), attr('emailVerified', 'dateTime'), attr('lastLogin', 'dateTime', { read_only: true }),
        attr('displayName', 'string'), attr('givenName', 'string'), attr('familyName', 'string'), attr('birthdate', 'date'),
        attr('profiles', 'plural', { read_only: true, attr_defs: ['identifier', 'domain', 'provider', 'profile', 'created'].map((n) => attr(n, n === 'profile' ? 'json' : n === 'created' ? 'dateTime' : 'string')) }),
        ...declared.filter((n) => !['emailVerified', 'lastLogin'].includes(n)).map((n) => attr(n, 'dateTime')),
  ].map(mark);
  const named = new Set(defs.map((d) => d.name));
  return {
    schema: {
      name: 'user',
      attr_defs: [...defs, ...indexes.filter((a) => !named.has(a.name)).map((a) => ({ name: a.name, type: 'json', indexed: a.state }))],
      additional_attributes: 'any JSON members; attribute names are letters, digits and _, starting with a letter',
    },
  };
};
