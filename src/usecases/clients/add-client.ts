import { newClient, type Client, type Feature } from '../../domain/clients';
import { event, type Acting } from '../../domain/events';
import type { UnitOfWork } from '../../domain/ports';
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
