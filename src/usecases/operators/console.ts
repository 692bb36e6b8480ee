import type { Client } from '../../domain/clients';
import { event, recordSubject, type Acting } from '../../domain/events';
import { Refusal } from '../../domain/refusal';
import { ACR_MULTI_FACTOR, acrMet } from '../../domain/session';
import type { Application } from '../../domain/storage/applications';
import type { StoredCredential } from '../../domain/storage/credentials';
import type { UserRecord } from '../../domain/storage/records';
import { operatorName, operatorRoleOf, OperatorForbiddenError, roleMay, type ConsoleAction, type OperatorRole } from '../../domain/operators';
import { browserSessionOf, startBrowserSession, type Admission } from '../account/browser-sessions';
import { accountClient } from '../account/account-client';
import { asAccount, type CallContext, type Services } from '../services';

/**
 * The operators' console's sign-in (docs/console.md#operators): an operator is an account of the
 * operators' application that signed in through its hosted sign-in with two factors (a password and
 * a one-time code, or a passkey that verified the person) and whose record holds a role. Its
 * browser gets a `console_session`: the account page's sessions never open the console.
 */

/** An operator in one console request: its session, its record and role, and the events' actor it is. */
export interface Operator { session: StoredCredential; record: UserRecord; role: OperatorRole; name: string; acting: Acting }

/** The login client the console signs in with: the operators' application's own (as its account page's). */
export const consoleLoginClient = (services: Pick<Services, 'clients'>, app: Application): Promise<Client | undefined> => accountClient(services, app);

/** Who may open a console session: an account with a role, signed in with two factors. */
const admitOperator: Admission = (record, proof) => {
  if (!operatorRoleOf(record)) {
    throw new Refusal('wrong_credentials', 'this account has no operator role: an admin gives one with gatehouse operators:role');
  }
  if (!proof || !acrMet(proof.amr, ACR_MULTI_FACTOR)) {
    throw new Refusal('wrong_credentials', 'the console needs a sign-in with two factors (a password and a one-time code, or a passkey that verifies you)');
  }
};

/** Spends the hosted sign-in's code (given to the console's callback) and opens the operator's console session. */
export function openConsoleSession(
  ctx: CallContext<'clock' | 'db' | 'tokens' | 'work'>, command: { client: Client; code: string; redirectUri: string; device: string },
): Promise<{ value: string; expiresAt: Date }> {
  return startBrowserSession(ctx, { ...command, kind: 'console_session', admit: admitOperator });
}

/**
 * The operator of a console session's cookie value, if its session lives and its record still has
 * a role (a role taken away ends its use of the console at the next request), for `action`
 * (OperatorForbiddenError when its role does not allow it).
 */
export async function consoleOperator(ctx: CallContext<'clock' | 'db' | 'work'>, command: { value: string; action: ConsoleAction }): Promise<Operator | undefined> {
  const session = await browserSessionOf(ctx, command.value, 'console_session');
  if (!session?.entityId) return undefined;
  const record = await ctx.services.db.records.find(ctx.app.id, { id: session.entityId });
  const role = record && operatorRoleOf(record);
  if (!record || !role) return undefined;
  if (!roleMay(role, command.action)) throw new OperatorForbiddenError(role, command.action);
  const name = operatorName(record);
  return { session, record, role, name, acting: { actor: { kind: 'operator', name }, origin: ctx.origin } };
}

/** Ends the operator's console session (its sign-out). */
export async function endConsoleSession(ctx: CallContext<'clock' | 'db' | 'work'>, command: { session: StoredCredential }): Promise<void> {
  const { db, clock, work } = ctx.services;
  const { family, entityId } = command.session;
  if (!family || entityId === null) return;
  const now = clock.now();
  await work.run(async (uow) => {
    const spent = await db.credentials.revokeFamily(ctx.app.id, family, now, uow.tx);
    uow.record(event('account.signed_out', ctx.app.id, now, asAccount(ctx, entityId), recordSubject(entityId), { tokens: spent }));
  }, { readCommitted: true });
}
