import { renderDisable, requireUserType } from '../../domain/users';
import { errors } from '../../errors';
import { formatTimestamp, parseTimestamp } from '../../domain/timestamps';
import { eraseUser } from '../../usecases/operators/erase-user';
import { exportUser } from '../../usecases/operators/export-user';
import { renderAccountExport } from '../../domain/account-export';
import type { AccountCommand } from '../../usecases/operators/deps';
import { disableUser } from '../../usecases/operators/disable-user';
import { enableUser } from '../../usecases/operators/enable-user';
import { resetSecondFactor } from '../../usecases/operators/reset-second-factor';
import { signOutUser } from '../../usecases/operators/sign-out-user';
import { asClient } from '../../usecases/services';
import type { Handler, RequestContext } from '../context';
import { identifyRecord, recordKey, recordNotFound } from '../record';
import { recordOrHistory } from '../../usecases/records/record-or-history';

/**
 * An account's lifecycle for an application's backend (docs/lifecycle.md): the
 * owner or direct_access client names the record as /entity does, and acts as itself (the audit log
 * and the account's activity name it). The command line runs the same use cases as an operator.
 */
async function accountCommand(ctx: RequestContext, options: { deleted?: boolean } = {}): Promise<AccountCommand> {
  if (ctx.params.get('type_name') !== undefined) requireUserType(ctx.params.require('type_name'));
  const p = ctx.principal;
  if (p.kind !== 'client') throw errors.permissionError('an account\'s lifecycle needs owner or direct_access client credentials');
  return { app: ctx.app, entityId: options.deleted ? await recordOrHistoryId(ctx) : (await identifyRecord(ctx)).id, acting: asClient(ctx, p.client) };
}

/** The id of the record a request names, or of a deleted one by its history (its uuid, or its id as is): an erasure names either. */
async function recordOrHistoryId(ctx: RequestContext): Promise<number> {
  const { key, attribute, argument, text } = recordKey(ctx);
  const found = await recordOrHistory(ctx.services, { applicationId: ctx.app.id, key });
  if (!found) throw recordNotFound(attribute, text, argument);
  return found.entityId;
}

/**
 * /entity.erase: the record and every trace of the person removed for good (a deleted record's
 * history too: named by its uuid or id); a tombstone stays, and /versions/entity answers 310.
 */
export const entityErase: Handler = async (ctx) => {
  const command = await accountCommand(ctx, { deleted: true });
  const { erasedAt, already } = await eraseUser(ctx.services, command);
  return { erased_at: formatTimestamp(erasedAt), already_erased: already };
};

/** /entity.export: the record and everything kept of the person, as one document (the right of access); no secret. */
export const entityExport: Handler = async (ctx) => {
  if (ctx.params.get('type_name') !== undefined) requireUserType(ctx.params.require('type_name'));
  const record = await identifyRecord(ctx);
  const p = ctx.principal;
  if (p.kind !== 'client') throw errors.permissionError('an export needs owner, direct_access or direct_read_access client credentials');
  return { result: renderAccountExport(await exportUser(ctx.services, { app: ctx.app, entityId: record.id, acting: asClient(ctx, p.client) })) };
};

/** /entity.disable: no sign-in by any method and every session ended, until enabled or until `until`. */
export const entityDisable: Handler = async (ctx) => {
  const raw = ctx.params.get('until');
  const until = raw === undefined ? undefined : parseTimestamp(raw);
  if (raw !== undefined && until === undefined) {
    throw errors.invalidArgument('until', 'must be a time such as 2026-12-01 09:00:00 (UTC) or 2026-12-01T09:00:00Z, between the years 1000 and 9999');
  }
  const { spent, disabled } = await disableUser(ctx.services, { ...(await accountCommand(ctx)), until, reason: ctx.params.get('reason') });
  return { disabled: renderDisable(disabled), sessions_ended: spent };
};

/** /entity.enable: may sign in again (its sessions stay ended); `was_disabled` false when there was nothing to do. */
export const entityEnable: Handler = async (ctx) => {
  const { wasDisabled } = await enableUser(ctx.services, await accountCommand(ctx));
  return { was_disabled: wasDisabled };
};

/** /entity.signOut: every session of the account ends, the person is told by email. */
export const entitySignOut: Handler = async (ctx) => {
  const { spent } = await signOutUser(ctx.services, await accountCommand(ctx));
  return { sessions_ended: spent };
};

/** /entity.resetSecondFactor: the authenticator and recovery codes removed, the person told by email; `removed` false when it had none. */
export const entityResetSecondFactor: Handler = async (ctx) => {
  const { removed } = await resetSecondFactor(ctx.services, await accountCommand(ctx));
  return { removed };
};
