import { Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { Client } from '../../domain/clients';
import { ownerOf } from '../../domain/storage/credentials';
import { randomToken, sha256Hex } from '../../domain/secrets';
import { proofOf, type Issuer, type TokenDeps, type TokenPair } from '../../domain/tokens';
import type { UnitOfWork } from '../../domain/ports';

/** What spending a code came to: its pair (and the record it was for), or why not. */
export type Exchange =
  | { pair: TokenPair; entityId: number | null }
  | { error: 'denied'; replayed?: string | null }
  | { error: 'mismatch'; expected: string | null }
  | { error: 'disabled' };

/** Spends a whole family at once (a spent refresh token or code came back: it has leaked). */
export const familyRevoker = ({ db, clock, work }: TokenDeps) => (app: Application, family: string) =>
  work.run(({ tx }) => db.credentials.revokeFamily(app.id, family, clock.now(), tx), { readCommitted: true });

/**
 * The grants that spend one credential for new ones: a code exchanged, a refresh token rotated. A
 * spent credential presented again has leaked, and its family is revoked.
 */
export function createGrants(deps: TokenDeps, { newPair, issuePair }: Issuer) {
  const { db, clock, work } = deps;
  const now = () => clock.now();
  const revokeFamily = familyRevoker(deps);
  /** Spends a code in `uow` and issues its pair, or says why not (see exchangeCode). */
  async function redeem(uow: UnitOfWork, app: Application, client: Client, code: string, redirectUri: string): Promise<Exchange> {
    const { tx } = uow;
    const hash = sha256Hex(code);
    const found = await db.credentials.find(app.id, 'authorization_code', hash, tx);
    if (!found || ownerOf(found) !== client.id) return { error: 'denied' };
    if (found.redirectUri !== redirectUri) return { error: 'mismatch', expected: found.redirectUri };
    if (!(await db.credentials.consume(app.id, 'authorization_code', hash, now(), tx, client.id))) {
      return { error: 'denied', replayed: found.usedAt ? found.family : null };
    }
    // the record's lock orders this with a disable: a code of a disabled user (mailed after it,
    // or issued by a sign-in in flight while it committed) gets nothing
    const record = found.entityId === null ? undefined : await db.records.findForUpdate(app.id, found.entityId, tx);
    if (record?.disabledAt) return { error: 'disabled' };
    const pair = await issuePair(app, client, found.entityId, found.family ?? randomToken(16), tx, proofOf(found));
    const state = found.extra?.transaction_state;
    return { pair: state === undefined ? pair : { ...pair, transaction_state: state }, entityId: found.entityId };
  }

  /** An exchange's pair, or its refusal; a replayed code's family is revoked first. */
  async function settled(app: Application, redirectUri: string, outcome: Exchange): Promise<TokenPair> {
    if ('pair' in outcome) return outcome.pair;
    if (outcome.error === 'mismatch') {
      throw new Refusal('redirect_mismatch', 'redirect_uri differs from the one used to obtain the code', {
        received: redirectUri, expected: outcome.expected,
      });
    }
    if (outcome.error === 'disabled') throw new Refusal('no_grant', 'the user of this authorization code is disabled: it gets no tokens until an operator enables it again');
    if (outcome.replayed) await revokeFamily(app, outcome.replayed);
    throw new Refusal('no_grant', 'the authorization code is invalid, expired, already used, or was issued for another client');
  }

  return {
    /**
     * grant_type=authorization_code. The code must be live, issued for `client`, and presented
     * with the redirect_uri it was issued with. A code presented again after its exchange revokes
     * the tokens it was exchanged for (RFC 6749 4.1.2).
     */
    async exchangeCode(app: Application, client: Client, code: string, redirectUri: string): Promise<TokenPair> {
      return settled(app, redirectUri, await work.run((uow) => redeem(uow, app, client, code, redirectUri)));
    },

    /** The exchange of a code inside the unit of work of a larger change (a password reset); `settleExchange` once it is done. */
    redeemCode: redeem,

    /** After the work of an exchange: its pair, or its refusal (a replayed code's family revoked first). */
    settleExchange: settled,

    /**
     * grant_type=refresh_token: spends the token and returns a new pair in the same family.
     * A spent token presented again has leaked: every token of its family is revoked.
     */
    async refresh(app: Application, client: Client, token: string): Promise<TokenPair> {
      const hash = sha256Hex(token);
      const { pair, rows } = newPair(app);
      // a disabled user's token does not rotate (the rotation's own condition, in its one round trip)
      if (await db.credentials.rotate(app.id, hash, client.id, rows, now())) return pair;
      const found = await db.credentials.find(app.id, 'refresh_token', hash);
      if (found?.usedAt && found.family) await revokeFamily(app, found.family);
      throw new Refusal('spent_refresh_token', 'the refresh token is invalid, expired or already used; sign in again', { field: 'refreshToken' });
    },
  };
}

