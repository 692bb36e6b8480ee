import { compileFilter, compileSort, FilterUseError } from '../../db/entity-filter';
import { StatementTimeoutError } from '../../db/sql';
import { DuplicateAttributeError, type UserRecord } from '../../domain/storage/records';
import { deepMerge, getPath, parsePath, parsePathList, pick, setPath } from '../../domain/entity-attributes';
import { FilterError, parseFilter } from '../../domain/filter';
import { MAX_PASSWORD_LENGTH } from '../../domain/passwords';
import { formatTimestamp } from '../../domain/timestamps';
import { deleteRecord } from '../../domain/accounts';
import { event, recordSubject, type Acting } from '../../domain/events';
import { asAccount, asClient } from '../../usecases/services';
import { addressChanged, emailChangeNotice, recordLocale } from '../../domain/email-change';
import { FRESH_SIGN_IN_SECONDS, mayResetPassword } from '../../domain/tokens';
import { checkUserDocument, READ_ONLY as READ_ONLY_ATTRIBUTES, renderWithProfiles, requireUserType } from '../../domain/users';
import { ApiError, errors } from '../../errors';
import { captureUser } from '../../usecases/login/signed-in';
import { caller, type Handler, type RequestContext } from '../context';
import { identifyRecord, namesRecord } from '../record';

type Doc = Record<string, unknown>;

const WRITERS = ['owner', 'direct_access'];
/** Set by the service: refused in a change, accepted unchanged in a replaced whole record. */
const READ_ONLY = [...READ_ONLY_ATTRIBUTES];

const typeName = (ctx: RequestContext) => {
  if (ctx.params.get('type_name') !== undefined) requireUserType(ctx.params.require('type_name'));
};

/**
 * Who writes a record: the record's own access token (`byUser`; `fresh` when it proves a sign-in
 * minutes ago or a reset link), or a client acting for the application; `clientId` names the
 * client either way.
 */
interface Writer { record: UserRecord; byUser: boolean; fresh: boolean; clientId: number | null; acting: Acting }

/**
 * The record a write names, and who writes: an owner or direct_access client names any record; an
 * access token writes its own record only, and never its password or verification state.
 * `tokenMayWrite` is false for what only clients do (replacing or deleting a whole record).
 */
async function writable(ctx: RequestContext, tokenMayWrite: boolean): Promise<Writer> {
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

/** What a change can touch: the record as the API shows it, without what the service sets. */
function writableDocument(record: UserRecord): Doc {
  const { lastLogin: _l, ...attributes } = record.attributes;
  return { ...attributes, email: record.email, username: record.username, emailVerified: record.emailVerified ? formatTimestamp(record.emailVerified) : null };
}

/**
 * A changed document back into columns and the attribute set (checked like a new record's), with
 * what an access token may not change refused. `passwordHash` was computed before the row lock.
 */
function toRow(record: UserRecord, next: Doc, writer: Writer, passwordHash: string | undefined) {
  const { password: _p, ...doc } = checkUserDocument(next);
  const bad = (name: string, why: string) => errors.invalidArgument(`attributes.${name}`, why);
  const verifiedKept = (doc.emailVerified?.getTime() ?? null) === (record.emailVerified?.getTime() ?? null);
  if (writer.byUser && !verifiedKept) throw bad('emailVerified', 'cannot be changed with an access token');
  const moved = addressChanged(record.email, doc.email);
  if (writer.byUser && moved && record.email !== null && doc.email === null) {
    throw bad('email', 'cannot be removed with an access token: the account needs it to be recovered; change it to another address instead');
  }
  if (writer.byUser && moved && !writer.fresh) {
    throw bad('email', `changing the email address with an access token needs one from a sign-in within the last ${FRESH_SIGN_IN_SECONDS / 60} minutes `
      + 'or from a password reset link (the new address receives the next reset link); sign in again, then send the change with the new access token');
  }
  const kept = record.attributes.lastLogin === undefined ? {} : { lastLogin: record.attributes.lastLogin };
  // a new address is unverified until verified, unless the application's client sets emailVerified with it
  return { ...doc, ...(moved && verifiedKept && { emailVerified: null }), attributes: { ...doc.attributes, ...kept }, passwordHash, moved };
}

/**
 * The password a change sets, hashed before the row is locked (argon2 takes tens of
 * milliseconds). A password is never part of the stored document, so it can only come from the
 * request. Access tokens never set one.
 */
async function passwordOf(ctx: RequestContext, request: ChangeRequest, { byUser }: Writer): Promise<string | undefined> {
  const password = 'path' in request ? (request.path.length === 1 && request.path[0] === 'password' ? request.value : undefined) : request.attributes.password;
  if (password === undefined) return undefined;
  if (byUser) throw errors.invalidArgument('attributes.password', 'cannot be set with an access token; use update_profile_native');
  if (typeof password !== 'string' || password.length < 1 || password.length > MAX_PASSWORD_LENGTH) {
    throw errors.invalidArgument('attributes.password', `must be a string of 1 to ${MAX_PASSWORD_LENGTH} characters`);
  }
  return ctx.services.passwords.hash(password);
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

/** The names of what a write changed: the columns and attributes whose values differ, and the password when one was set. */
function differing(before: UserRecord, after: UserRecord, passwordHash: string | undefined): string[] {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const columns = (['email', 'username', 'emailVerified'] as const).filter((c) => !same(before[c], after[c]));
  const names = new Set([...Object.keys(before.attributes), ...Object.keys(after.attributes)]);
  return [...columns, ...(passwordHash ? ['password'] : []), ...[...names].filter((n) => !same(before.attributes[n], after.attributes[n]))];
}

/**
 * Applies `change` to the record under a row lock, so concurrent writers never lose each other's
 * change, with the snapshot of what commits. Answers the record as the API shows it now.
 */
async function writeRecord(ctx: RequestContext, writer: Writer, type: 'record.updated' | 'record.replaced', change: (current: Doc) => Doc, passwordHash?: string) {
  const { db, clock, work, versions, baseUrls } = ctx.services;
  try {
    return await work.run(async (uow) => {
      const { tx } = uow;
      const locked = await db.records.findForUpdate(ctx.app.id, writer.record.id, tx);
      if (!locked) throw new ApiError('recordNotFound', 'the record was deleted meanwhile');
      const { moved, ...row } = toRow(locked, change(writableDocument(locked)), writer, passwordHash);
      const now = clock.now();
      const changed = await db.records.replace(locked, row, now, tx);
      const written = await versions.written(changed, tx);
      const subject = recordSubject(locked.id);
      uow.record(event(type, ctx.app.id, now, writer.acting, subject, { attributes: differing(locked, changed, passwordHash) }, { snapshot: written.snapshot }));
      if (passwordHash) uow.record(event('account.password_changed', ctx.app.id, now, writer.acting, subject, { by: 'api' }));
      // the old address is told, whoever changed it (docs/api.md#changing-the-email-address)
      if (moved) {
        await emailChangeNotice(db, uow, writer.acting, {
          app: ctx.app, baseUrl: baseUrls.of(ctx.app.name), locale: recordLocale(locked), clientId: writer.clientId, byUser: writer.byUser,
        }, locked, changed, now);
      }
      return written.rendered;
    });
  } catch (e) {
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
    if (JSON.stringify(value) === JSON.stringify(getPath(await captureUser(ctx, record), path))) return undefined;
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
  if (!request) return answer(ctx, await captureUser(ctx, writer.record));
  const passwordHash = await passwordOf(ctx, request, writer);
  const updated = await writeRecord(ctx, writer, 'record.updated', (current) =>
    ('path' in request ? setPath(current, request.path, request.value) : deepMerge(current, request.attributes)), passwordHash);
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
  if (!request) return answer(ctx, await captureUser(ctx, writer.record));
  const passwordHash = await passwordOf(ctx, request, writer);
  const shown = 'path' in request ? {} : await captureUser(ctx, writer.record);
  const updated = await writeRecord(ctx, writer, 'path' in request ? 'record.updated' : 'record.replaced', (current) =>
    ('path' in request ? setPath(current, request.path, request.value) : withoutUnchangedReadOnly(request.attributes, shown)), passwordHash);
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
  const { db, clock, work, versions } = ctx.services;
  if (!(await work.run((uow) => deleteRecord({ db, versions, now: () => clock.now() }, uow, writer.acting, ctx.app.id, record.id)))) {
    throw new ApiError('recordNotFound', 'the record was deleted meanwhile');
  }
  return {};
};

/** The filter and paging parameters of entity.find and entity.count, as SQL. */
function compiled(ctx: RequestContext) {
  const raw = ctx.params.get('filter');
  const dialect = ctx.services.db.sequelize.getDialect() === 'mysql' ? 'mysql' : 'sqlite';
  try {
    const where = raw === undefined ? { where: '1 = 1', values: [] } : compileFilter(parseFilter(raw), dialect);
    return { where, dialect } as const;
  } catch (e) {
    if (e instanceof FilterError || e instanceof FilterUseError) throw errors.invalidArgument('filter', e.message);
    throw e;
  }
}

/** Bytes of stored attributes one entity.find answer carries at most. */
export const MAX_ANSWER_BYTES = 10 * 1024 * 1024;

/** A statement of entity.find or entity.count that the database stopped at its time limit: 200 naming the filter and the limit. */
async function bounded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
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
  const { where, dialect } = compiled(ctx);
  const limit = Math.max(1, whole(ctx, 'max_results', 1000, 1000));
  const offset = whole(ctx, 'first_result', 0, 1_000_000_000);
  const sortRaw = ctx.params.json('sort_on');
  if (sortRaw !== undefined && (!Array.isArray(sortRaw) || sortRaw.length > 10 || sortRaw.some((s) => typeof s !== 'string'))) {
    throw errors.invalidArgument('sort_on', 'must be a JSON list of attribute names, "-" first for descending, such as ["-created","id"]');
  }
  let sort;
  try {
    sort = compileSort((sortRaw as string[] | undefined) ?? [], dialect);
  } catch (e) {
    if (e instanceof FilterUseError) throw errors.invalidArgument('sort_on', e.message);
    throw e;
  }
  const paths = ctx.params.get('attributes') === undefined ? undefined : parsePathList(ctx.params.json('attributes'));
  const { db, entityQueryTimeoutMs } = ctx.services;
  // read from a replica when there is one (docs/scaling.md#read-replicas): a search may miss the last changes
  const page = await bounded(() => db.lagTolerant.records.searchPage(ctx.app.id, where, sort, { limit, offset }, entityQueryTimeoutMs));
  let bytes = 0;
  const fits = page.findIndex((r) => (bytes += r.bytes) > MAX_ANSWER_BYTES);
  if (fits >= 0) {
    throw errors.invalidArgument('max_results', `the ${page.length} records of this page hold more than ${MAX_ANSWER_BYTES / (1024 * 1024)} MiB, the most one answer carries; `
      + `ask for at most ${Math.max(1, fits)} records (max_results), page through the rest with first_result`, { limit_bytes: MAX_ANSWER_BYTES });
  }
  const records = await db.lagTolerant.records.findByIds(ctx.app.id, page.map((r) => r.id));
  const profiles = await db.lagTolerant.profiles.forEntities(ctx.app.id, records.map((r) => r.id));
  const results = records.map((r) => {
    const rendered = renderWithProfiles(r, profiles.get(r.id) ?? []);
    return paths ? pick(rendered, paths) : rendered;
  });
  const total = ctx.params.get('show_total_count') === 'true' ? { total_count: await bounded(() => db.lagTolerant.records.count(ctx.app.id, where, entityQueryTimeoutMs)) } : {};
  return { result_count: results.length, results, ...total };
};

/** /entity.count: how many records match `filter`. */
export const countEntities: Handler = async (ctx) => {
  typeName(ctx);
  caller(ctx);
  const { where } = compiled(ctx);
  return { total_count: await bounded(() => ctx.services.db.lagTolerant.records.count(ctx.app.id, where, ctx.services.entityQueryTimeoutMs)) };
};

