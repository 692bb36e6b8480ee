import { randomUUID } from 'node:crypto';
import { parseFilter } from '../../domain/filter';
import { endSessionsOf, EVERY_HOLD_ON_A_RECORD } from '../../domain/accounts';
import { recordLocale } from '../../domain/email-change';
import { event, recordSubject, type Acting } from '../../domain/events';
import { OPERATOR_ROLE_ATTRIBUTE, operatorRoleOf, type OperatorRole } from '../../domain/operators';
import type { UnitOfWork } from '../../domain/ports';
import { Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import { DuplicateAttributeError, isDisabled, type UserRecord } from '../../domain/storage/records';
import { USER_TYPE, isValidEmail } from '../../domain/users';
import { accountClient } from '../account/account-client';
import { recordResetLink } from '../login/email-requests';
import { assertLongEnough, insertRegistered } from '../records/create-records';
import { reviseRecord } from '../records/versions';
import type { Services } from '../services';

type Deps = Pick<Services, 'baseUrls' | 'clients' | 'clock' | 'db' | 'entityQueryTimeoutMs' | 'passwords' | 'tokens' | 'versions' | 'work'>;

/**
 * What making an operator did: a new account (mailed a link to choose its password unless given
 * one), an operator's role changed, or an account nobody made an operator taken over (`reset`).
 */
export type OperatorAdded =
  | { kind: 'created'; record: UserRecord; mailed: boolean }
  | { kind: 'role_set'; record: UserRecord; from: OperatorRole; to: OperatorRole }
  | { kind: 'taken_over'; record: UserRecord };

/** An operator's role taken away. */
export interface RoleRemoved { kind: 'role_removed'; record: UserRecord }

/** Making an operator of an account that holds no role: someone may have made it to be given one. */
export class NotAnOperatorsAccountError extends Refusal {
  constructor(readonly email: string) {
    super('forbidden', `an account with ${email} exists in the operators' application but was not made an operator by gatehouse operators:add `
      + '(anyone who registered it first would hold it): it is not given a role. Take it over with --reset: its password, second factor, passkeys, '
      + 'linked identities, sessions and verified mark are removed, and the address is mailed a link to choose a password');
  }
}

/**
 * Makes `email` an operator of the console with `role` (docs/console.md#operators). An account
 * the command did not make (one without an operator's role) is refused, or with `reset` taken
 * over: everything it signs in with and its verified mark removed, its sessions ended. A new or
 * taken-over account is mailed a single-use link to choose its password (`password` gives one
 * instead); using the link verifies the address, and the first sign-in adds a second factor.
 */
export async function addOperator(
  deps: Deps,
  command: { app: Application; email: string; role: OperatorRole; password?: string; reset: boolean; acting: Acting },
): Promise<OperatorAdded> {
  const { app, email, role, acting } = command;
  if (!isValidEmail(email)) throw new Refusal('invalid', 'is not an email address', { field: 'email' });
  const found = await deps.db.records.find(app.id, { email });
  if (found && command.password !== undefined) {
    throw new Refusal('invalid', 'is for a new operator only: this account exists (an operator chooses its password from the mailed link, or an admin sets one with users:set-password --app)', { field: 'password' });
  }
  if (found) return promote(deps, { app, record: found, role, reset: command.reset, acting });
  assertLongEnough(app, command.password, 'password');
  const passwordHash = command.password === undefined ? null : await deps.passwords.hash(command.password);
  const client = command.password === undefined ? await linkClient(deps, app) : undefined;
  try {
    return await deps.work.run(async (uow) => {
      const created = await insertRegistered(deps, uow, {
        applicationId: app.id, typeName: USER_TYPE, uuid: randomUUID(), email, username: null, emailVerified: null, passwordHash,
        attributes: { [OPERATOR_ROLE_ATTRIBUTE]: role },
      }, acting);
      if (client) await recordResetLink(linkContext(deps, app, acting), uow, { client, record: created, locale: recordLocale(created), acting, kind: 'operator_setup' });
      return { kind: 'created' as const, record: created, mailed: client !== undefined };
    });
  } catch (e) {
    // made meanwhile by another command: judged as any existing account
    if (e instanceof DuplicateAttributeError && e.attribute === 'email') return addOperator(deps, command);
    throw e;
  }
}

/**
 * Gives an account a role (docs/console.md#operators): an operator's role changes; an account that
 * is no operator is refused, or with `reset` taken over. `null` takes the role away.
 */
/** At most this many admins are locked by a change of a role (far more than any console has). */
const MAX_ADMINS = 1_000;
type PromoteDeps = Pick<Services, 'baseUrls' | 'clients' | 'clock' | 'db' | 'entityQueryTimeoutMs' | 'tokens' | 'versions' | 'work'>;
export async function promote(deps: PromoteDeps, command: { app: Application; record: UserRecord; role: OperatorRole; reset: boolean; acting: Acting }): Promise<OperatorAdded>;
export async function promote(deps: PromoteDeps, command: { app: Application; record: UserRecord; role: OperatorRole | null; reset: boolean; acting: Acting }): Promise<OperatorAdded | RoleRemoved>;
export async function promote(
  deps: PromoteDeps, command: { app: Application; record: UserRecord; role: OperatorRole | null; reset: boolean; acting: Acting },
): Promise<OperatorAdded | RoleRemoved> {
  const { app, acting } = command;
  // the link client is looked up before the transaction; whether to take the account over is judged on the record as locked
  const client = command.role !== null && command.reset ? await linkClient(deps, app) : undefined;
  // the admins, when the change may take the role of one away: never the last who can sign in
  const admins = command.role === 'admin' ? [] : await deps.db.records.searchPage(
    app.id, parseFilter(`${OPERATOR_ROLE_ATTRIBUTE} = 'admin'`), ['id'], { limit: MAX_ADMINS, offset: 0 }, deps.entityQueryTimeoutMs,
  );
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    // the operators' application claimed first when an admin may lose the role, then every admin and
    // the account locked in the order of their ids and judged as locked: of two admins demoting each
    // other at once, the second finds the first's change (the claim is a written row: on a Galera
    // cluster, where the record locks hold on one node alone, the two conflict on every node)
    if (command.role !== 'admin') await deps.db.applications.claim(app.id, now, uow.tx);
    const ids = [...new Set([...admins.map((a) => a.id), command.record.id])].sort((a, b) => a - b);
    const held = new Map<number, UserRecord>();
    for (const id of ids) {
      const found = await deps.db.records.findForUpdate(app.id, id, uow.tx);
      if (found) held.set(id, found);
    }
    const locked = held.get(command.record.id);
    if (!locked) throw new Refusal('gone', 'the account was deleted meanwhile');
    const role = command.role;
    if (operatorRoleOf(locked) === 'admin' && role !== 'admin'
      && ![...held.values()].some((r) => r.id !== locked.id && operatorRoleOf(r) === 'admin' && !isDisabled(r, now))) {
      throw new Refusal('invalid', 'this is the last admin who can sign in: give another operator the admin role first', { field: 'role' });
    }
    const takeOver = role !== null && operatorRoleOf(locked) === undefined;
    if (takeOver && !command.reset) throw new NotAnOperatorsAccountError(locked.email ?? locked.uuid);
    if (role === null || !takeOver) return setRoleInWork(deps, uow, { locked, role, acting, now });
    const taken = await takeOverAccount(deps, uow, acting, locked, role);
    await recordResetLink(linkContext(deps, app, acting), uow, { client: client!, record: taken, locale: recordLocale(taken), acting, kind: 'operator_setup' });
    return { kind: 'taken_over' as const, record: taken };
  });
}

/** An operator's role set or taken away (null), in the caller's unit of work, on the account as locked. */
async function setRoleInWork(
  deps: Pick<Services, 'clock' | 'db' | 'versions'>, uow: UnitOfWork, command: { locked: UserRecord; role: OperatorRole | null; acting: Acting; now: Date },
): Promise<OperatorAdded | RoleRemoved> {
  const { locked, role, acting, now } = command;
  if (role === null) {
    const { [OPERATOR_ROLE_ATTRIBUTE]: _old, ...rest } = locked.attributes;
    void _old;
    const removed = await reviseRecord(deps, uow, locked, { email: locked.email, username: locked.username, emailVerified: locked.emailVerified, attributes: rest }, acting, { replace: true, now });
    return { kind: 'role_removed' as const, record: removed?.record ?? locked };
  }
  const changed = await reviseRecord(deps, uow, locked, { attributes: { [OPERATOR_ROLE_ATTRIBUTE]: role } }, acting, { now });
  return { kind: 'role_set' as const, record: changed?.record ?? locked, from: operatorRoleOf(locked) ?? role, to: role };
}

/** What the mailed link is issued with: the application, who acts, and the services it takes. */
const linkContext = (deps: Pick<Services, 'baseUrls' | 'clock' | 'tokens'>, app: Application, acting: Acting) =>
  ({ app, origin: acting.origin, clientAddress: '', services: { baseUrls: deps.baseUrls, clock: deps.clock, tokens: deps.tokens } });

/** The login client a new operator's link is sent from (the account page's). */
async function linkClient(deps: Pick<Services, 'clients'>, app: Application) {
  const client = await accountClient(deps, app);
  if (!client) throw new Refusal('misconfigured', `the operators' application ${app.name} has no login client to send a link from (set account_client_id)`);
  return client;
}

/**
 * Everything an account signs in with removed (password, authenticator and recovery codes,
 * passkeys, linked identities) with its verified mark, its sessions ended, and the role set:
 * what someone who registered the address first had of it is gone.
 */
async function takeOverAccount(deps: Pick<Services, 'clock' | 'db' | 'versions'>, uow: UnitOfWork, acting: Acting, locked: UserRecord, role: OperatorRole): Promise<UserRecord> {
  const { db } = deps;
  const { tx } = uow;
  const app = locked.applicationId;
  const now = deps.clock.now();
  const subject = recordSubject(locked.id);
  // the account claimed: a passkey its registrant adds on another Galera node meanwhile conflicts with this (docs/scaling.md)
  await db.records.claim(locked.id, now, tx);
  if (await db.factors.removeTotp(app, locked.id, tx)) uow.record(event('account.second_factor_removed', app, now, acting, subject, { method: 'totp' }));
  for (const passkey of await db.passkeys.list(app, locked.id, tx)) {
    if (await db.passkeys.remove(app, locked.id, passkey.id, tx)) uow.record(event('account.passkey_removed', app, now, acting, subject, { passkey: passkey.id }));
  }
  for (const identity of await db.social.profiles.forEntity(app, locked.id, tx)) {
    if (await db.social.profiles.remove(app, locked.id, identity.identifier, tx)) uow.record(event('account.identity_unlinked', app, now, acting, subject, { provider: identity.provider }));
  }
  // every live code, token and link of the account's: nothing the registrant holds still works (an enroll_token, an address change's undo link)
  const tokens = await endSessionsOf(db, app, locked.id, EVERY_HOLD_ON_A_RECORD, null, now, uow);
  uow.record(event('account.signed_out', app, now, acting, subject, { tokens }));
  // (the names say what it took: a password, an authenticator or a passkey the values do not show)
  const changed = await reviseRecord(deps, uow, locked, { passwordHash: null, emailVerified: null, attributes: { [OPERATOR_ROLE_ATTRIBUTE]: role } }, acting,
    { now, names: ['password', 'emailVerified', OPERATOR_ROLE_ATTRIBUTE, 'factors'] });
  return changed!.record;
}
