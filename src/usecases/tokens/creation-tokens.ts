import type { Application } from '../../domain/storage/applications';
import type { StoredCredential } from '../../domain/storage/credentials';
import type { Tx } from '../../domain/storage';
import { sha256Hex } from '../../domain/secrets';
import { invalidField } from '../../domain/refusal';
import type { Services } from '../services';

/**
 * Spends a creation token in the transaction of the record it creates. With a calling client: one
 * issued for it (or by it for itself), or for no client in particular. Without one (`null`): only
 * a token issued for no client.
 */
export async function consumeCreationToken(
  { db, clock }: Pick<Services, 'db' | 'clock'>, tx: Tx, command: { app: Application; token: string; clientId: number | null },
): Promise<StoredCredential> {
  const { app, clientId } = command;
  const hash = sha256Hex(command.token);
  const usable = (owner: number | null) => db.credentials.consume(app.id, 'creation_token', hash, clock.now(), tx, owner);
  // a calling client may also spend a token bound to no client
  if (!(await usable(clientId)) && (clientId === null || !(await usable(null)))) {
    throw invalidField('creationToken', 'the creation token is invalid, expired, already used, or was issued for another client');
  }
  return (await db.credentials.find(app.id, 'creation_token', hash, tx))!;
}
