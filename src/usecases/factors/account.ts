import type { Client, Feature } from '../../domain/clients';
import type { StoredCredential } from '../../domain/storage/credentials';
import { isDisabled, type UserRecord } from '../../domain/storage/records';
import { notSignedIn } from '../../domain/refusal';
import type { CallContext } from '../services';

/**
 * The account an access token acts for, for a change of how it signs in, and the client the token
 * was issued by (which acts for the person): live, of this application, and not disabled.
 */
export async function accountOfToken(ctx: CallContext<'clock' | 'db'>, token: StoredCredential): Promise<{ record: UserRecord; client: Client }> {
  const { db } = ctx.services;
  const record = token.entityId === null ? undefined : await db.records.find(ctx.app.id, { id: token.entityId });
  const stored = token.clientId === null ? undefined : await db.clients.findById(ctx.app.id, token.clientId);
  if (!record || isDisabled(record, ctx.services.clock.now()) || !stored) throw notSignedIn();
  const { secretSealed: _sealed, ...client } = stored;
  return { record, client: { ...client, features: client.features as Feature[] } };
}
