import { parseFilter } from '../../domain/filter';
import { OPERATOR_ROLE_ATTRIBUTE, operatorRoleOf, type OperatorRole } from '../../domain/operators';
import { Refusal } from '../../domain/refusal';
import type { Acting } from '../../domain/events';
import type { Application } from '../../domain/storage/applications';
import { isDisabled, type UserRecord } from '../../domain/storage/records';
import type { Services } from '../services';
import { setRoleInWork } from './add-operator';

/**
 * The console's operators (docs/console.md#operators): who they are, their role, their last
 * sign-in and their second factors, for admins; an admin changes a role or takes it away, never
 * leaving the console without an admin.
 */

export interface OperatorRow {
  entityId: number; email: string | null; role: OperatorRole; lastSignIn: Date | null; disabled: boolean;
  /** The authenticator app is on; how many passkeys. */
  totp: boolean; passkeys: number;
}

/** At most this many operators are listed. */
export const MAX_OPERATORS = 1_000;

const operatorsFilter = () => parseFilter(`${OPERATOR_ROLE_ATTRIBUTE} is not null`);

/** The operators of the operators' application `app`, by address. */
export async function listOperators(deps: Pick<Services, 'clock' | 'db' | 'entityQueryTimeoutMs'>, command: { app: Application }): Promise<OperatorRow[]> {
  const { db } = deps;
  const page = await db.records.searchPage(command.app.id, operatorsFilter(), ['email'], { limit: MAX_OPERATORS, offset: 0 }, deps.entityQueryTimeoutMs);
  const records = await db.records.findByIds(command.app.id, page.map((r) => r.id));
  const now = deps.clock.now();
  return Promise.all(records.map(async (r) => {
    const [totp, passkeys] = await Promise.all([db.factors.totp(command.app.id, r.id), db.passkeys.list(command.app.id, r.id)]);
    const last = typeof r.attributes.lastLogin === 'string' ? new Date(r.attributes.lastLogin) : null;
    return {
      entityId: r.id, email: r.email, role: operatorRoleOf(r)!, lastSignIn: last && !Number.isNaN(last.getTime()) ? last : null, disabled: isDisabled(r, now),
      totp: Boolean(totp?.confirmedAt), passkeys: passkeys.length,
    };
  }));
}

/**
 * Sets an operator's role, or takes it away (null). Refused when it would leave no admin: the
 * admins are locked in the change's transaction, so two admins demoting each other at once cannot
 * both succeed (the second finds the first's change).
 */
export async function changeOperatorRole(
  deps: Pick<Services, 'clock' | 'db' | 'entityQueryTimeoutMs' | 'versions' | 'work'>,
  command: { app: Application; entityId: number; role: OperatorRole | null; acting: Acting },
): Promise<void> {
  const { db, work } = deps;
  const { app } = command;
  const admins = await db.records.searchPage(app.id, parseFilter(`${OPERATOR_ROLE_ATTRIBUTE} = 'admin'`), ['id'], { limit: MAX_OPERATORS, offset: 0 }, deps.entityQueryTimeoutMs);
  await work.run(async (uow) => {
    // every admin and the account locked, in the order of their ids, then judged as locked
    const ids = [...new Set([...admins.map((a) => a.id), command.entityId])].sort((a, b) => a - b);
    const locked = new Map<number, UserRecord>();
    for (const id of ids) {
      const found = await db.records.findForUpdate(app.id, id, uow.tx);
      if (found) locked.set(id, found);
    }
    const target = locked.get(command.entityId);
    if (!target || operatorRoleOf(target) === undefined) throw new Refusal('gone', 'this account is not an operator (any more)');
    const otherAdmins = [...locked.values()].filter((r) => r.id !== target.id && operatorRoleOf(r) === 'admin').length;
    if (operatorRoleOf(target) === 'admin' && command.role !== 'admin' && otherAdmins === 0) {
      throw new Refusal('invalid', 'this is the last admin: give another operator the admin role first', { field: 'role' });
    }
    await setRoleInWork(deps, uow, { locked: target, role: command.role, acting: command.acting, now: deps.clock.now() });
  });
}
