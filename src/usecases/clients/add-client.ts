import { newClient, type Client, type Feature } from '../../domain/clients';
import { event, type Acting } from '../../domain/events';
import type { UnitOfWork } from '../../domain/ports';
import type { Application } from '../../domain/storage/applications';
import { accountClient } from '../account/account-client';
import type { Services } from '../services';
import type { AdminCall, AdminDeps } from './deps';

export interface NewClientInput { description: string; features: Feature[]; settings?: Record<string, string> }

/** Inserts a client in the work's transaction and records client.created; answers it with its plain secret (shown once). */
export async function insertClient(
  deps: Pick<AdminDeps, 'db' | 'box' | 'clock'>, uow: UnitOfWork, acting: Acting, applicationId: number, input: NewClientInput,
): Promise<{ client: Client; secret: string }> {
  const { row, secret } = newClient(deps.box, applicationId, input);
  const now = deps.clock.now();
  const stored = await deps.db.clients.insert(row, now, uow.tx);
  uow.record(event('client.created', applicationId, now, acting, { kind: 'client', id: stored.clientId }, { features: input.features }));
  const { secretSealed: _sealed, ...client } = stored;
  return { client: { ...client, features: client.features as Feature[] }, secret };
}

/** /clients/add: a new client of the application. */
export function addClient(deps: AdminDeps, command: AdminCall & NewClientInput): Promise<{ client: Client; secret: string }> {
  return deps.work.run((uow) => insertClient(deps, uow, command.acting, command.applicationId, command));
}

/**
 * An operator's new client (`gatehouse clients:add`, the console): a login client signs people in
 * on the same pages as the application's own login client, so it gets that client's default flow.
 * Answers the client, its secret (shown once), the flow settings it got, and the application's own
 * login client (the account page's), when it is a login client.
 */
export async function addOperatorsClient(
  deps: AdminDeps & Pick<Services, 'clients'>, command: { app: Application; acting: Acting; description: string; features: Feature[] },
): Promise<{ client: Client; secret: string; settings?: Record<string, string>; own?: Client }> {
  const { app, features } = command;
  const own = features.includes('login_client') ? await accountClient(deps, app) : undefined;
  const settings = own?.settings.default_flow_name !== undefined && own.settings.default_flow_version !== undefined
    ? { default_flow_name: own.settings.default_flow_name, default_flow_version: own.settings.default_flow_version } : undefined;
  const added = await addClient(deps, { applicationId: app.id, acting: command.acting, description: command.description, features, ...(settings && { settings }) });
  return { ...added, ...(settings && { settings }), ...(own && { own }) };
}
