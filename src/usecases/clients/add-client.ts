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

/**
 * A new client of the application (/clients/add, `gatehouse clients:add`, the console). A login
 * client signs people in on the same pages as the application's own login client (the account
 * page's), so it gets that client's default flow: every hosted sign-in (the pages, the OpenID
 * provider's, the device page) works for it at once. Answers the client, its secret (shown once),
 * the flow settings it got, and the application's own login client, when it is a login client.
 */
export async function addClient(
  deps: AdminDeps & Pick<Services, 'clients'>, command: AdminCall & NewClientInput,
): Promise<{ client: Client; secret: string; settings?: Record<string, string>; own?: Client }> {
  const own = command.features.includes('login_client') ? await accountClient(deps, await applicationOf(deps, command.applicationId)) : undefined;
  const flow = own?.settings.default_flow_name !== undefined && own.settings.default_flow_version !== undefined
    ? { default_flow_name: own.settings.default_flow_name, default_flow_version: own.settings.default_flow_version } : undefined;
  const settings = flow || command.settings ? { ...flow, ...command.settings } : undefined;
  const added = await deps.work.run((uow) => insertClient(deps, uow, command.acting, command.applicationId, { ...command, ...(settings && { settings }) }));
  return { ...added, ...(flow && { settings: flow }), ...(own && { own }) };
}

async function applicationOf(deps: Pick<AdminDeps, 'db'>, applicationId: number): Promise<Application> {
  const app = await deps.db.applications.findById(applicationId);
  if (!app) throw new Error(`application ${applicationId} is gone`);
  return app;
}
