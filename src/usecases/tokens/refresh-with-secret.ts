import { refusesCredential } from '../../domain/storage/records';
import type { Application } from '../../domain/storage/applications';
import type { Client } from '../../domain/clients';
import { ownerOf } from '../../domain/storage/credentials';
import { randomToken, safeEqual, sha256Hex } from '../../domain/secrets';
import { MAX_CLOCK_SKEW_MS, parseSignatureDate, sign } from '../../domain/signature';
import { sessionFacts } from '../../domain/session';
import { accessSeconds, refreshSessionKey } from '../../domain/tokens';
import { invalidField, notSignedIn } from '../../domain/refusal';
import type { Services } from '../services';
import { event, recordSubject, type Origin } from '../../domain/events';
import { revokeFamily } from './families';

/** A mobile SDK's signed refresh: the access token it holds (expired or not), the time it signed, and the signature. */
export interface SecretRefreshCommand { app: Application; client: Client; accessToken: string; date: string; signature: string; origin: Origin }

/**
 * /oauth/refresh_access_token: a new access token for the session the presented token identifies,
 * when `signature` is base64(HMAC-SHA1(refresh secret, "refresh_access_token\n" + date + "\n" +
 * token + "\n")) and `date` is within the Signature scheme's skew. The session moves to the new
 * token (single use, as a refresh token), with its event (token.refreshed); a spent session
 * presented again has leaked, and its whole family is revoked.
 */
export async function refreshWithSecret(
  deps: Pick<Services, 'db' | 'clock' | 'work' | 'box' | 'tokens'>, command: SecretRefreshCommand,
): Promise<{ accessToken: string; expiresIn: number }> {
  const { db, clock, box, work, tokens } = deps;
  const { app, client, accessToken: presented, date, signature } = command;
  const now = () => clock.now();
  const ended = () => notSignedIn('the session of this access token is unknown, has ended or was already refreshed; sign in again');
  const when = parseSignatureDate(date);
  if (!when || Math.abs(now().getTime() - when.getTime()) > MAX_CLOCK_SKEW_MS) {
    throw invalidField('date', `must be the current UTC time as YYYY-MM-DD HH:MM:SS, within ${MAX_CLOCK_SKEW_MS / 60_000} minutes of the server clock`);
  }
  const hash = sha256Hex(refreshSessionKey(presented));
  const session = await db.credentials.find(app.id, 'refresh_secret', hash);
  if (!session || ownerOf(session) !== client.id || session.entityId === null) throw ended();
  const owner = await db.records.find(app.id, { id: session.entityId });
  if (owner && refusesCredential(owner, session.createdAt, now())) throw ended();
  let secret: string;
  try {
    secret = box.open(String(session.extra?.secret), tokens.secretBinding(hash));
  } catch {
    throw ended();
  }
  if (!safeEqual(sign(secret, `refresh_access_token\n${date}\n${presented}\n`), signature)) {
    throw invalidField('signature', 'does not sign this access token and date with the refresh secret sent at sign-in');
  }
  const next = randomToken(20);
  const family = session.family ?? randomToken(16);
  const facts = sessionFacts(session);
  const moved = await work.run(async ({ tx, record }) => {
    if (!(await db.credentials.consume(app.id, 'refresh_secret', hash, now(), tx))) return false;
    // the token it replaces ends with it, if it had not expired yet
    await db.credentials.consume(app.id, 'access_token', sha256Hex(presented), now(), tx);
    await tokens.issueAll([
      // in the session's family with its facts, with no proof of a fresh sign-in
      { issue: { ...tokens.accessToken(app, client, session.entityId!, null, facts ? { session: facts } : null), family }, value: next },
      { issue: tokens.refreshSecretIssue(app, client, session.entityId!, family, next, secret, facts), value: refreshSessionKey(next) },
    ], tx);
    record(event('token.refreshed', app.id, now(), { actor: { kind: 'account', accountId: session.entityId!, clientId: client.clientId }, origin: command.origin },
      recordSubject(session.entityId!), {}));
    return true;
  });
  if (!moved) {
    const spent = await db.credentials.find(app.id, 'refresh_secret', hash);
    if (spent?.usedAt && spent.family) await revokeFamily(deps, app, { family: spent.family, entityId: spent.entityId, origin: { ...command.origin, clientId: client.clientId } });
    throw ended();
  }
  return { accessToken: next, expiresIn: accessSeconds(app) };
}
