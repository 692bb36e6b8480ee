import { NoSuchClientError } from '../../domain/clients';
import { event } from '../../domain/events';
import { randomToken } from '../../domain/secrets';
import type { AdminCall, AdminDeps } from './deps';

/** Gives a client a new secret (sealed at rest); answers it, shown once. The old one stops working in every process when this commits. */
export function resetSecret(deps: AdminDeps, command: AdminCall & { forClientId: string }): Promise<string> {
  const { applicationId, forClientId } = command;
  const secret = randomToken(16);
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    const updated = await deps.db.clients.mutate(applicationId, forClientId, (c) => ({ secretSealed: deps.box.seal(secret, c.clientId) }), now, uow.tx);
    if (!updated) throw new NoSuchClientError(forClientId);
    uow.record(event('client.secret_reset', applicationId, now, command.acting, { kind: 'client', id: forClientId }, {}));
    return secret;
  });
}
