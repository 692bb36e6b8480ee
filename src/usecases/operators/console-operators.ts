import { parseFilter } from '../../domain/filter';
import { OPERATOR_ROLE_ATTRIBUTE, operatorRoleOf, type OperatorRole } from '../../domain/operators';
import { Refusal } from '../../domain/refusal';
import type { Acting } from '../../domain/events';
import type { Application } from '../../domain/storage/applications';
import { isDisabled } from '../../domain/storage/records';
import type { Services } from '../services';
import { NotAnOperatorsAccountError, promote } from './add-operator';

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
 * Sets an operator's role, or takes it away (null): `promote`, which never takes the role of the
 * last admin who can sign in (the admins locked in the change's transaction, so two admins
 * demoting each other at once cannot both succeed). An account that is no operator is refused.
 */
export async function changeOperatorRole(
  deps: Pick<Services, 'baseUrls' | 'clients' | 'clock' | 'db' | 'entityQueryTimeoutMs' | 'tokens' | 'versions' | 'work'>,
  command: { app: Application; entityId: number; role: OperatorRole | null; acting: Acting },
): Promise<void> {
  const record = await deps.db.records.find(command.app.id, { id: command.entityId });
  if (!record || operatorRoleOf(record) === undefined) throw new Refusal('gone', 'this account is not an operator (any more)');
  try {
    await promote(deps, { app: command.app, record, role: command.role, reset: false, acting: command.acting });
  } catch (e) {
    // its role taken away meanwhile: no operator to change any more
    if (e instanceof NotAnOperatorsAccountError) throw new Refusal('gone', 'this account is not an operator (any more)');
    throw e;
  }
}
