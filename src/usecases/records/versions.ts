import { changedNames } from '../../domain/accounts';
import { event, recordSubject, type Acting, type DomainEvent, type KeptEvent } from '../../domain/events';
import type { UnitOfWork } from '../../domain/ports';
import type { NewCredential } from '../../domain/storage/credentials';
import type { OutboxJob } from '../../domain/storage/outbox';
import { nextState, updated, type NewRecord, type RecordChange, type UserRecord } from '../../domain/storage/records';
import type { StoredProfile } from '../../domain/storage/social';
import type { Written } from '../../domain/versions';
import type { Services } from '../services';

/**
 * The one way a record gets a new version (docs/versions.md): inserted, changed, or touched when
 * what belongs to it changes, each in the caller's unit of work under the record's row lock, each
 * recording `record.created` or `record.updated` with the names of what differs and the version's
 * snapshot. A change no reader of the record can see writes no version. The record store's writes
 * are called here and nowhere else in the use cases (the architecture test says so);
 * write-record.ts judges the writes of clients and people by the one policy, then writes here.
 */

type Deps = Pick<Services, 'clock' | 'db' | 'versions'>;

/** The names of what a write changed: the columns and attributes whose values differ, and the password when one was set. */
export function differing(before: UserRecord, after: UserRecord, password: boolean): string[] {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const columns = (['email', 'username', 'emailVerified'] as const).filter((c) => !same(before[c], after[c]));
  const names = new Set([...Object.keys(before.attributes), ...Object.keys(after.attributes)]);
  return [...columns, ...(password ? ['password'] : []), ...[...names].filter((n) => !same(before.attributes[n], after.attributes[n]))];
}

/**
 * A record inserted in `uow` with its first version: `record.created` names what it holds and
 * carries its snapshot. `attach` adds what belongs to it before the version is taken (a linked
 * identity); `acting` may name the record itself. A taken email, username or uuid raises
 * DuplicateAttributeError.
 */
export async function insertRecord(
  deps: Deps, uow: UnitOfWork, record: NewRecord, acting: Acting | ((created: UserRecord) => Acting),
  options: { attach?: (created: UserRecord) => Promise<void>; inImport?: boolean } = {},
): Promise<{ written: Written; acting: Acting }> {
  const created = await deps.db.records.insert(record, deps.clock.now(), uow.tx);
  if (options.attach) await options.attach(created);
  const written = options.attach ? await deps.versions.written(created, uow.tx) : deps.versions.created(created);
  const who = typeof acting === 'function' ? acting(created) : acting;
  const names = changedNames({
    email: created.email ?? undefined, username: created.username ?? undefined, emailVerified: created.emailVerified ?? undefined,
    passwordHash: created.passwordHash ?? undefined, attributes: created.attributes,
  });
  uow.record(event('record.created', created.applicationId, created.created, who, recordSubject(created.id), { attributes: names },
    { snapshot: written.snapshot, ...(options.inImport && { inImport: true as const }) }));
  return { written, acting: who };
}

/** How a change is written and said: its kind of event, the names it gives (else what differs), the events it follows, its time. */
export interface Revision {
  kind?: 'record.updated' | 'record.replaced';
  /** The names `record.updated` gives, when the writer knows more than the values say (a password rehashed). */
  names?: string[];
  /** Events recorded just before the version's (a sign-in's, before the version it writes). */
  preceding?: DomainEvent[];
  now?: Date;
  /** The whole client-written state rather than a merge (the record API's replace). */
  replace?: boolean;
}

/**
 * `change` written to a record locked in `uow` (merged into it, or its whole state with
 * `replace`), with its new version. No version, and nothing written, when nothing a reader of the
 * record sees differs (undefined). A taken email or username raises DuplicateAttributeError.
 */
export async function reviseRecord(deps: Deps, uow: UnitOfWork, locked: UserRecord, change: RecordChange, acting: Acting, how: Revision = {}): Promise<Written | undefined> {
  const now = how.now ?? deps.clock.now();
  const password = change.passwordHash !== undefined && change.passwordHash !== locked.passwordHash;
  // a replace writes the whole client-written state: what it leaves out is removed
  const whole = how.replace
    ? { email: change.email ?? null, username: change.username ?? null, emailVerified: change.emailVerified ?? null, attributes: change.attributes ?? {}, passwordHash: change.passwordHash }
    : undefined;
  const names = how.names ?? differing(locked, whole ? nextState(locked, whole, now) : updated(locked, change, now), password);
  if (names.length === 0) return undefined;
  const changed = whole ? await deps.db.records.replace(locked, whole, now, uow.tx) : await deps.db.records.update(locked, change, now, uow.tx);
  const written = await deps.versions.written(changed, uow.tx);
  uow.record(...(how.preceding ?? []), event(how.kind ?? 'record.updated', locked.applicationId, now, acting, recordSubject(locked.id), { attributes: names }, { snapshot: written.snapshot }));
  return written;
}

/** A time set on a record locked in `uow` (emailVerified, or a time attribute of the flow's), with its new version. */
export async function markTime(deps: Deps, uow: UnitOfWork, locked: UserRecord, attribute: string, acting: Acting): Promise<Written> {
  const now = deps.clock.now();
  const written = await deps.versions.written(await deps.db.records.setTime(locked, attribute, now, uow.tx), uow.tx);
  uow.record(event('record.updated', locked.applicationId, now, acting, recordSubject(locked.id), { attributes: [attribute] }, { snapshot: written.snapshot }));
  return written;
}

/**
 * A new version of a record locked in `uow` for what belongs to it without being a column of it:
 * its linked identities (`profiles`), which its snapshot shows. (How it signs in is not shown by
 * a snapshot: a factor added or removed writes no version.)
 */
export async function touchRecord(deps: Deps, uow: UnitOfWork, locked: UserRecord, acting: Acting, names: string[]): Promise<Written> {
  const now = deps.clock.now();
  const written = await deps.versions.written(await deps.db.records.touch(locked, now, uow.tx), uow.tx);
  uow.record(event('record.updated', locked.applicationId, now, acting, recordSubject(locked.id), { attributes: names }, { snapshot: written.snapshot }));
  return written;
}

/** A sign-in's next state (lastLogin, a rehashed password) as its one-call write will commit it, with its snapshot. */
export function signInVersion(deps: Pick<Services, 'versions'>, read: UserRecord, change: RecordChange, now: Date, profiles: StoredProfile[]): { next: UserRecord; written: Written } {
  const next = updated(read, change, now);
  return { next, written: deps.versions.withProfiles(next, profiles) };
}

/**
 * A sign-in's whole write in one call (RecordStore.signInAlone): `next` from signInVersion if the
 * record is still as `read`, with the sign-in's credentials, outbox rows and events. False when it
 * changed since: nothing is written.
 */
export const writeSignInAlone = (deps: Pick<Services, 'db'>, read: UserRecord, next: UserRecord, credentials: NewCredential[], jobs: OutboxJob[], events: readonly KeptEvent[], now: Date) =>
  deps.db.records.signInAlone(read, next, credentials, jobs, events, now);
