import type { Application } from '../../domain/storage/applications';
import type { Client } from '../../domain/clients';
import { timeOrderedId, type Origin } from '../../domain/events';
import { sha256Hex } from '../../domain/secrets';
import type { TokenPair } from '../../domain/tokens';
import { Refusal } from '../../domain/refusal';
import type { Services } from '../services';
import { revokeFamily } from './families';

/**
 * grant_type=refresh_token: spends the token and returns a new pair in the same family, with its
 * event (token.refreshed), in the rotation's one round trip (a disabled user's token does not
 * rotate). A spent token presented again has leaked: every token of its family is revoked
 * (token.reuse_detected).
 */
export async function rotateRefreshToken(
  deps: Pick<Services, 'db' | 'clock' | 'work' | 'tokens'>, command: { app: Application; client: Client; refreshToken: string; origin: Origin },
): Promise<TokenPair> {
  const { db, clock, tokens } = deps;
  const { app, client, origin } = command;
  const hash = sha256Hex(command.refreshToken);
  const { pair, rows } = tokens.newPair(app);
  const now = clock.now();
  const refreshed = { type: 'token.refreshed', version: 1, eventId: timeOrderedId(now), applicationId: app.id, occurredAt: now, origin, data: {}, clientId: client.clientId } as const;
  if (await db.credentials.rotateAlone(app.id, hash, client.id, rows, now, refreshed)) return pair;
  const found = await db.credentials.find(app.id, 'refresh_token', hash);
  if (found?.usedAt && found.family) await revokeFamily(deps, app, { family: found.family, entityId: found.entityId, origin: { ...origin, clientId: client.clientId } });
  throw new Refusal('spent_refresh_token', 'the refresh token is invalid, expired or already used; sign in again', { field: 'refreshToken' });
}
