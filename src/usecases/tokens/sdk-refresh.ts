import { invalidField, notSignedIn } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { Client } from '../../domain/clients';
import { ownerOf } from '../../domain/storage/credentials';
import { randomToken, safeEqual, sha256Hex } from '../../domain/secrets';
import { MAX_CLOCK_SKEW_MS, parseSignatureDate, sign } from '../../domain/signature';
import { sessionFacts } from '../../domain/session';
import { ACCESS_TOKEN_SECONDS, refreshSessionKey, type Issuer, type TokenDeps } from '../../domain/tokens';
import { familyRevoker } from './grants';

/** A mobile SDK's signed refresh of its access token (its session is single use, as a refresh token). */
export function createSdkRefresh(deps: TokenDeps, { issueAll, accessToken, refreshSecretIssue, secretBinding }: Issuer) {
  const { db, clock, box, work } = deps;
  const now = () => clock.now();
  const revokeFamily = familyRevoker(deps);
  return {
    /**
     * /oauth/refresh_access_token: a new access token for the session the `presented` token identifies
     * (expired or not), when `signature` is base64(HMAC-SHA1(refresh secret, "refresh_access_token\n"
     * + date + "\n" + presented + "\n")) and `date` is within the Signature scheme's skew. The
     * session moves to the new token (single use, as a refresh token); a spent session presented
     * again has leaked, and its whole family is revoked.
     */
    async refreshWithSecret(app: Application, client: Client, presented: string, date: string, signature: string): Promise<{ access_token: string; expires_in: number }> {
      const ended = () => notSignedIn('the session of this access token is unknown, has ended or was already refreshed; sign in again');
      const when = parseSignatureDate(date);
      if (!when || Math.abs(now().getTime() - when.getTime()) > MAX_CLOCK_SKEW_MS) {
        throw invalidField('date', `must be the current UTC time as YYYY-MM-DD HH:MM:SS, within ${MAX_CLOCK_SKEW_MS / 60_000} minutes of the server clock`);
      }
      const hash = sha256Hex(refreshSessionKey(presented));
      const session = await db.credentials.find(app.id, 'refresh_secret', hash);
      if (!session || ownerOf(session) !== client.id || session.entityId === null) throw ended();
      if ((await db.records.find(app.id, { id: session.entityId }))?.disabledAt) throw ended();
      let secret: string;
      try {
        secret = box.open(String(session.extra?.secret), secretBinding(hash));
      } catch {
        throw ended();
      }
      if (!safeEqual(sign(secret, `refresh_access_token\n${date}\n${presented}\n`), signature)) {
        throw invalidField('signature', 'does not sign this access token and date with the refresh secret sent at sign-in');
      }
      const next = randomToken(20);
      const family = session.family ?? randomToken(16);
      const facts = sessionFacts(session);
      const moved = await work.run(async ({ tx }) => {
        if (!(await db.credentials.consume(app.id, 'refresh_secret', hash, now(), tx))) return false;
        // the token it replaces ends with it, if it had not expired yet
        await db.credentials.consume(app.id, 'access_token', sha256Hex(presented), now(), tx);
        await issueAll([
          // in the session's family with its facts, with no proof of a fresh sign-in
          { issue: { ...accessToken(app, client, session.entityId!, null, facts ? { session: facts } : null), family }, value: next },
          { issue: refreshSecretIssue(app, client, session.entityId!, family, next, secret, facts), value: refreshSessionKey(next) },
        ], tx);
        return true;
      });
      if (!moved) {
        const spent = await db.credentials.find(app.id, 'refresh_secret', hash);
        if (spent?.usedAt && spent.family) await revokeFamily(app, spent.family);
        throw ended();
      }
      return { access_token: next, expires_in: ACCESS_TOKEN_SECONDS };
    },
  };
}

