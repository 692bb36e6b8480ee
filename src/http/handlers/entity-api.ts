import { DuplicateAttributeError, type UserRecord } from '../../domain/storage/records';
import { deepMerge, getPath, parsePath, parsePathList, setPath } from '../../domain/entity-attributes';
import { FilterError, FilterUseError, parseFilter, type Filter } from '../../domain/filter';
import { StatementTimeoutError } from '../../domain/storage/transactions';
import { mayResetPassword } from '../../domain/tokens';
import { READ_ONLY as READ_ONLY_ATTRIBUTES, requireUserType } from '../../domain/users';
import { ApiError, errors } from '../../errors';
import { AttributeRefusedError, changeRecord, RecordGoneError, removeRecord, shownRecord, type Writer } from '../../usecases/records/change-record';
import { checkSearch, countRecords, findRecords, MAX_ANSWER_BYTES, PageTooLargeError } from '../../usecases/records/find-records';
import { asAccount, asClient } from '../../usecases/services';
import type { Acting } from '../../domain/events';
import { caller, type Handler, type RequestContext } from '../context';
import { identifyRecord, namesRecord } from '../record';

type Doc = Record<string, unknown>;

const WRITERS = ['owner', 'direct_access'];
/** Set by the service: refused in a change, accepted unchanged in a replaced whole record. */
const READ_ONLY = [...READ_ONLY_ATTRIBUTES];

const typeName = (ctx: RequestContext) => {
  if (ctx.params.get('type_name') !== undefined) requireUserType(ctx.params.require('type_name'));
};

/** Who writes (see Writer), and as whom the change is recorded. */
type Writing = Writer & { acting: Acting };

/**
 * The record a write names, and who writes: an owner or direct_access client names any record; an
 * access token writes its own record only, and never its password or verification state.
 * `tokenMayWrite` is false for what only clients do (replacing or deleting a whole record).
 */
async function writable(ctx: RequestContext, tokenMayWrite: boolean): Promise<Writing> {
  const p = ctx.principal;
  if (p.kind === 'entity') {
    if (!tokenMayWrite) {
      throw errors.permissionError('an access token changes sub-values of its record only (attribute_name); the whole record needs owner or direct_access client credentials');
    }
    const own = p.token.entityId === null ? undefined : await ctx.services.db.records.find(ctx.app.id, { id: p.token.entityId });
    if (!own) throw errors.invalidAccessToken();
    if (namesRecord(ctx) && (await identifyRecord(ctx)).id !== own.id) throw errors.permissionError('the access token is for another record');
    return { record: own, byUser: true, fresh: mayResetPassword(p.token, ctx.services.clock.now()), clientId: p.token.clientId, acting: asAccount(ctx, own.id) };
  }
  if (p.kind !== 'client' || !WRITERS.some((k) => p.client.features.includes(k as never))) {
    throw errors.permissionError(`changing records needs the feature ${WRITERS.join(' or ')}, or an access token for the record`);
  }
  return { record: await identifyRecord(ctx), byUser: false, fresh: false, clientId: p.client.id, acting: asClient(ctx, p.client) };
}

/**
 * The password a change sends: a password is never part of the stored document, so it can only
 * come from the request; the record use case judges who may set it and how strong it must be.
 */
function passwordOf(request: ChangeRequest): unknown {
  return 'path' in request ? (request.path.length === 1 && request.path[0] === 'password' ? request.value : undefined) : request.attributes.password;
}

/** Drops the read-only members of a whole record sent back unchanged (a read, edited, then replaced). */
function withoutUnchangedReadOnly(doc: Doc, shown: Doc): Doc {
  const out: Doc = { ...doc };
  for (const name of READ_ONLY) {
    if (!Object.hasOwn(out, name)) continue;
    if (JSON.stringify(out[name]) !== JSON.stringify(shown[name])) {
      throw errors.invalidArgument(`attributes.${name}`, 'is set by the service and cannot be written');
    }
    delete out[name];
  }
  return out;
}

/** A change through the record use case, its domain errors as the API's. */
async function writeRecord(ctx: RequestContext, writer: Writing, kind: 'record.updated' | 'record.replaced', change: (current: Doc) => Doc, password?: unknown) {
  try {
    return await changeRecord(ctx.services, { app: ctx.app, acting: writer.acting, writer, kind, change, password });
  } catch (e) {
    if (e instanceof AttributeRefusedError) throw errors.invalidArgument(`attributes.${e.attribute}`, e.message);
    if (e instanceof RecordGoneError) throw new ApiError('recordNotFound', e.message);
    if (e instanceof DuplicateAttributeError) {
      throw new ApiError('uniqueViolation', `another record already has this ${e.attribute}`, { extra: { argument_name: `attributes.${e.attribute}` } });
    }
    throw e;
  }
}

const jsonObject = (ctx: RequestContext, name: string): Doc => {
  const v = ctx.params.json(name, true);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw errors.invalidArgument(name, 'must be a JSON object, such as {"displayName":"Ada"}');
  return v as Doc;
};

type ChangeRequest = { path: string[]; value: unknown } | { attributes: Doc };

/**
 * `attribute_name` and its JSON `value`; or, for the whole record, a JSON object in `value` (how
 * the original's clients and SDKs send it) or in `attributes` (the same, by another name).
 * A read-only sub-value sent back as the API shows it (a synced copy of `profiles`) is no change
 * (undefined); changed, it is refused.
 */
async function changeRequest(ctx: RequestContext, record: UserRecord): Promise<ChangeRequest | undefined> {
  const name = ctx.params.get('attribute_name');
  if (name === undefined) {
    if (ctx.params.get('value') !== undefined && ctx.params.get('attributes') !== undefined) {
      throw errors.invalidArgument('value', 'send the new attributes in value or in attributes, not both');
    }
    return { attributes: jsonObject(ctx, ctx.params.get('attributes') !== undefined ? 'attributes' : 'value') };
  }
  const path = parsePath(name);
  const value = ctx.params.json('value', true);
  if (READ_ONLY.includes(path[0])) {
    if (JSON.stringify(value) === JSON.stringify(getPath(await shownRecord(ctx.services, record), path))) return undefined;
    throw errors.invalidArgument('attribute_name', `${path[0]} is set by the service and cannot be written${path[0] === 'profiles' ? ' (identities are linked with /oauth/link_account_native)' : ''}`);
  }
  return { path, value };
}

const answer = (ctx: RequestContext, rendered: Doc) => (ctx.params.get('include_record') === 'true' ? { result: rendered } : {});

/** /entity.update: merges `attributes` into the record (objects member by member), or sets `attribute_name` to `value`. */
export const updateEntity: Handler = async (ctx) => {
  typeName(ctx);
  const writer = await writable(ctx, true);
  const request = await changeRequest(ctx, writer.record);
  if (!request) return answer(ctx, await shownRecord(ctx.services, writer.record));
  const updated = await writeRecord(ctx, writer, 'record.updated', (current) =>
    ('path' in request ? setPath(current, request.path, request.value) : deepMerge(current, request.attributes)), passwordOf(request));
  return answer(ctx, updated);
};

/**
 * /entity.replace: the record's whole attribute set becomes `value` (or `attributes`), or the
 * sub-value at `attribute_name` becomes `value`; a record's access token replaces sub-values of
 * its own record (the mobile SDKs' sync), under /entity.update's rules.
 */
export const replaceEntity: Handler = async (ctx) => {
  typeName(ctx);
  const writer = await writable(ctx, ctx.params.get('attribute_name') !== undefined);
  const request = await changeRequest(ctx, writer.record);
  if (!request) return answer(ctx, await shownRecord(ctx.services, writer.record));
  const shown = 'path' in request ? {} : await shownRecord(ctx.services, writer.record);
  const updated = await writeRecord(ctx, writer, 'path' in request ? 'record.updated' : 'record.replaced', (current) =>
    ('path' in request ? setPath(current, request.path, request.value) : withoutUnchangedReadOnly(request.attributes, shown)), passwordOf(request));
  return answer(ctx, updated);
};

/**
 * /entity.delete: the record with its codes, tokens and identities (client credentials); or, with
 * `attribute_name`, one sub-value (a record's access token too, on its own record).
 */
export const deleteEntity: Handler = async (ctx) => {
  typeName(ctx);
  const name = ctx.params.get('attribute_name');
  const writer = await writable(ctx, name !== undefined);
  const { record } = writer;
  if (name !== undefined) {
    const path = parsePath(name);
    if (READ_ONLY.includes(path[0])) throw errors.invalidArgument('attribute_name', `${path[0]} is set by the service and cannot be deleted`);
    if (path[0] === 'password') {
      throw errors.invalidArgument('attribute_name', 'the password is not an attribute and cannot be deleted; an application\'s client sets a new one with /entity.update attribute_name=password');
    }
    await writeRecord(ctx, writer, 'record.updated', (current) => (path.length === 1 && ['email', 'username', 'emailVerified'].includes(path[0])
      ? { ...current, [path[0]]: null }
      : setPath(current, path, undefined)));
    return {};
  }
  try {
    await removeRecord(ctx.services, { app: ctx.app, acting: writer.acting, entityId: record.id });
  } catch (e) {
    if (e instanceof RecordGoneError) throw new ApiError('recordNotFound', e.message);
    throw e;
  }
  return {};
};

/** The `filter` of entity.find and entity.count, parsed (none: every record). */
function filterOf(ctx: RequestContext): Filter | undefined {
  const raw = ctx.params.get('filter');
  try {
    const filter = raw === undefined ? undefined : parseFilter(raw);
    if (filter !== undefined) checkSearch(ctx.services, { filter });
    return filter;
  } catch (e) {
    if (e instanceof FilterError || e instanceof FilterUseError) throw errors.invalidArgument('filter', e.message);
    throw e;
  }
}

/**
 * A search or a count through its use case: a filter or sort storage cannot use is 200 naming it; a
 * statement the database stopped at its time limit is 200 naming the filter and the limit.
 */
async function searching<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof FilterUseError) throw errors.invalidArgument(e.part === 'sort' ? 'sort_on' : 'filter', e.message);
    if (!(e instanceof StatementTimeoutError)) throw e;
    throw errors.invalidArgument('filter', `the search took longer than ${e.timeoutMs} ms, the limit of one entity query, and was stopped; `
      + 'use fewer or simpler conditions (comparisons on email, username, id, uuid or the timestamps use indexes)', { limit_ms: e.timeoutMs });
  }
}

const whole = (ctx: RequestContext, name: string, fallback: number, max: number) => {
  const raw = ctx.params.get(name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || raw.length > String(max).length || Number(raw) > max) throw errors.invalidArgument(name, `must be a whole number from 0 to ${max}`);
  return Number(raw);
};

/** /entity.find: records matching `filter`, one page, sorted (`sort_on`), optionally with the total. */
export const findEntities: Handler = async (ctx) => {
  typeName(ctx);
  caller(ctx);
  const filter = filterOf(ctx);
  const limit = Math.max(1, whole(ctx, 'max_results', 1000, 1000));
  const offset = whole(ctx, 'first_result', 0, 1_000_000_000);
  const sortRaw = ctx.params.json('sort_on');
  if (sortRaw !== undefined && (!Array.isArray(sortRaw) || sortRaw.length > 10 || sortRaw.some((s) => typeof s !== 'string'))) {
    throw errors.invalidArgument('sort_on', 'must be a JSON list of attribute names, "-" first for descending, such as ["-created","id"]');
  }
  if (sortRaw !== undefined) await searching(async () => checkSearch(ctx.services, { sortOn: sortRaw as string[] }));
  const paths = ctx.params.get('attributes') === undefined ? undefined : parsePathList(ctx.params.json('attributes'));
  try {
    const found = await searching(() => findRecords(ctx.services, {
      applicationId: ctx.app.id, filter, sortOn: (sortRaw as string[] | undefined) ?? [], limit, offset, paths, total: ctx.params.get('show_total_count') === 'true',
    }));
    return { result_count: found.results.length, results: found.results, ...(found.total !== undefined && { total_count: found.total }) };
  } catch (e) {
    if (!(e instanceof PageTooLargeError)) throw e;
    throw errors.invalidArgument('max_results', `${e.message}, the most one answer carries; `
      + `ask for at most ${e.fits} records (max_results), page through the rest with first_result`, { limit_bytes: MAX_ANSWER_BYTES });
  }
};

/** /entity.count: how many records match `filter`. */
export const countEntities: Handler = async (ctx) => {
  typeName(ctx);
  caller(ctx);
  const filter = filterOf(ctx);
  return { total_count: await searching(() => countRecords(ctx.services, { applicationId: ctx.app.id, filter })) };
};
