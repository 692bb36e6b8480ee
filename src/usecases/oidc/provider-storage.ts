import { event, kept, recordSubject, type Acting, type DomainEvent, type Origin } from '../../domain/events';
import type { Application } from '../../domain/storage/applications';
import type { CredentialKind, NewCredential } from '../../domain/storage/credentials';
import type { OidcObjectWrite } from '../../domain/storage/oidc-state';
import { sha256Hex } from '../../domain/secrets';
import { randomUUID } from 'node:crypto';
import { logoutTargetOf, type LogoutNotice } from '../../domain/backchannel-logout';
import type { Tx } from '../../domain/storage';
import type { Services } from '../services';

/**
 * The OpenID provider's writes (docs/openid-connect.md#storage), each one use case with its
 * events: the provider's adapter (src/oidc/adapter.ts) only translates between oidc-provider and
 * these. What a write is for (an exchange, a refresh, a logout, a revocation) is the `why` the
 * adapter read from the provider's request.
 */
export type ProviderStorageDeps = Pick<Services, 'db' | 'clock' | 'work'>;

/** Who a provider's write is for: the account (its record id, when the object has one) through the app (its client_id). */
export interface ProviderParty { entityId: number | null; clientId: string | null; origin: Origin }

/** The person through the app, else the app itself, else Gatehouse. */
const actingOf = (party: ProviderParty): Acting => ({
  actor: party.entityId !== null ? { kind: 'account', accountId: party.entityId, ...(party.clientId !== null && { clientId: party.clientId }) }
    : party.clientId !== null ? { kind: 'client', clientId: party.clientId } : { kind: 'system' },
  origin: party.origin,
});

/**
 * Saves a code or token the provider issued (a new one, or one saved again with its new payload):
 * one statement that commits alone, on the grant's hot path. A client's own access token
 * (client_credentials) is saved with its event, `oidc.client_credentials_issued`.
 */
export async function saveProviderToken(
  deps: ProviderStorageDeps, command: { app: Application; token: NewCredential; party: ProviderParty; scopes: string[]; also?: NewCredential },
): Promise<void> {
  const { db, clock, work } = deps;
  const now = clock.now();
  // a device code's first save, with its user code's row: inserted together (a user code live already fails it, never taken over)
  if (command.also) {
    const also = command.also;
    return work.run(async (uow) => {
      await db.credentials.insert([command.token, also], now, uow.tx);
    });
  }
  if (command.token.kind !== 'oidc_client_token' || command.party.clientId === null) return db.credentials.saveAlone(command.token, now);
  const clientId = command.party.clientId;
  await work.run(async (uow) => {
    await db.credentials.save(command.token, now, uow.tx);
    uow.record(event('oidc.client_credentials_issued', command.app.id, now, { actor: { kind: 'client', clientId }, origin: command.party.origin },
      { kind: 'client', id: clientId }, { scopes: command.scopes }));
  });
}

/**
 * Spends a code (exchanged), a device's code (its tokens polled) or a refresh token (rotated) with its event, in one round trip: true
 * for one caller only. Any other token is spent alone (destroyed by its client or the provider).
 */
export async function spendProviderToken(deps: Pick<ProviderStorageDeps, 'clock' | 'db'>, command: { app: Application; kind: CredentialKind; valueHash: string; party: ProviderParty }): Promise<boolean> {
  const { db, clock } = deps;
  const now = clock.now();
  const { app, kind, valueHash, party } = command;
  if ((kind !== 'oidc_code' && kind !== 'oidc_refresh_token' && kind !== 'oidc_device_code') || party.entityId === null) return db.credentials.consumeAlone(app.id, kind, valueHash, now);
  const subject = recordSubject(party.entityId);
  const happened = kind === 'oidc_code' ? event('oidc.code_redeemed', app.id, now, actingOf(party), subject, {})
    : kind === 'oidc_device_code' ? event('oidc.device_code_redeemed', app.id, now, actingOf(party), subject, {})
      : event('oidc.token_refreshed', app.id, now, actingOf(party), subject, {});
  return db.credentials.consumeWithEventAlone(app.id, kind, valueHash, now, kept(happened));
}

/** Why a grant ends: a spent code or refresh token came back (it leaked), the app revoked a token of it, the person signed out. */
export type GrantEnd = 'reuse' | 'revoked' | 'logout' | 'ended';

/**
 * Ends a grant: every code and token of it spent, its Grant and what else belongs to it gone, in
 * one transaction. A grant that ended tokens still live records why: a reuse is
 * `token.reuse_detected` (Gatehouse ended the family), a revocation `oidc.grant_revoked` (the app).
 * Several callers ending one grant at once (the provider revokes each model of it in parallel)
 * record it once: the first to spend its tokens.
 */
export async function endProviderGrant(deps: ProviderStorageDeps, command: { app: Application; grantId: string; why: GrantEnd; party: ProviderParty }): Promise<number> {
  const { db, clock, work } = deps;
  const { app, grantId, why, party } = command;
  return work.run(async (uow) => {
    const now = clock.now();
    const revoked = await db.credentials.revokeFamily(app.id, grantId, now, uow.tx);
    await db.oidcState.destroyGrant(app.id, grantId, uow.tx);
    await db.oidcState.destroy(app.id, 'Grant', sha256Hex(grantId), uow.tx);
    const entityId = party.entityId ?? (revoked > 0 ? await db.credentials.ownerOfFamily(app.id, grantId, uow.tx) : null);
    if (revoked > 0 && entityId !== null) {
      if (why === 'reuse') uow.record(event('token.reuse_detected', app.id, now, { actor: { kind: 'system' }, origin: party.origin }, recordSubject(entityId), { revoked }));
      if (why === 'revoked') uow.record(event('oidc.grant_revoked', app.id, now, actingOf({ ...party, entityId: null }), recordSubject(entityId), { revoked }));
    }
    return revoked;
  }, { readCommitted: true });
}

/**
 * Saves an object of the provider's state (a session, an interaction, a grant, a replay marker, a
 * pushed request); false when `once` (a replay marker) finds it saved already. A grant saved with
 * scopes given to an app (`granted`: those not granted before, or any the person allowed on the
 * consent page) is `oidc.grant_given`, in the save's transaction; a grant saved again with nothing
 * new (a sign-in asking again for what was given) records nothing.
 */
export async function saveProviderObject(
  deps: ProviderStorageDeps,
  command: { app: Application; object: OidcObjectWrite; once?: boolean; party: ProviderParty; granted?: { scopes: string[]; consent: 'implied' | 'given' }; logouts?: ProviderLogout[] },
): Promise<boolean> {
  const { db, clock, work } = deps;
  const { app, object, party, granted, logouts } = command;
  if (command.once) return db.oidcState.saveNewAlone(app.id, object);
  // a session kept while one app of it signs out of it: that app told, in the transaction that saves the session without it
  if (object.model === 'Session' && logouts?.length) {
    await work.run(async (uow) => {
      await db.oidcState.save(app.id, object, uow.tx);
      const owed = await providerLogoutEvent(deps, app, logouts, party, uow.tx);
      if (owed) uow.record(owed);
    });
    return true;
  }
  if (object.model !== 'Grant' || !granted || (granted.scopes.length === 0 && granted.consent === 'implied') || party.entityId === null) {
    await db.oidcState.saveAlone(app.id, object);
    return true;
  }
  const entityId = party.entityId;
  await work.run(async (uow) => {
    await db.oidcState.save(app.id, object, uow.tx);
    uow.record(event('oidc.grant_given', app.id, clock.now(), actingOf(party), recordSubject(entityId), granted));
  });
  return true;
}

/** Marks an object of the provider's state spent: true for one caller only. */
export const spendProviderObject = (deps: Pick<ProviderStorageDeps, 'clock' | 'db'>, command: { app: Application; model: string; idHash: string }) =>
  deps.db.oidcState.consumeAlone(command.app.id, command.model, command.idHash, deps.clock.now());

/**
 * Deletes an object of the provider's state. The person's provider session ended by their
 * sign-out from an app (RP-initiated logout) is `oidc.logout`, in the same transaction.
 */
export async function destroyProviderObject(
  deps: ProviderStorageDeps, command: { app: Application; model: string; idHash: string; why?: 'logout'; party: ProviderParty; logouts?: ProviderLogout[] },
): Promise<void> {
  const { db, clock, work } = deps;
  const { app, model, idHash, party, logouts } = command;
  if (model !== 'Session' || (command.why !== 'logout' && !logouts?.length)) return db.oidcState.destroyAlone(app.id, model, idHash);
  await work.run(async (uow) => {
    const session = await db.oidcState.find(app.id, model, idHash, uow.tx);
    await db.oidcState.destroy(app.id, model, idHash, uow.tx);
    const entityId = session?.entityId ?? party.entityId;
    if (session && entityId !== null && command.why === 'logout') uow.record(event('oidc.logout', app.id, clock.now(), actingOf({ ...party, entityId }), recordSubject(entityId), {}));
    // the apps of the session told, in the transaction that ends it
    const owed = logouts?.length ? await providerLogoutEvent(deps, app, logouts, party, uow.tx) : undefined;
    if (owed) uow.record(owed);
  });
}

/** Deletes every state object of a grant (its tokens are ended by endProviderGrant). */
export const destroyProviderGrantState = (deps: Pick<ProviderStorageDeps, 'db'>, command: { app: Application; grantId: string }) =>
  deps.db.oidcState.destroyGrantAlone(command.app.id, command.grantId);

/** Spends a code or token that is no longer wanted (a destroy): alone, without an event. */
export const destroyProviderToken = (deps: Pick<ProviderStorageDeps, 'clock' | 'db'>, command: { app: Application; kind: CredentialKind; valueHash: string }) =>
  deps.db.credentials.consumeAlone(command.app.id, command.kind, command.valueHash, deps.clock.now());

/** One app of a session an app's logout ends, as the provider names it (src/web/provider-request.ts keeps them until the session's end). */
export interface ProviderLogout { clientId: string; subject: string; sid: string | null }

/**
 * An app's logout (RP-initiated, docs/openid-connect.md#back-channel-logout): the provider names
 * each app of the session that ends, with the session id it gave it; those with a back-channel
 * logout address are owed a logout token, recorded as `oidc.backchannel_logout` in the transaction
 * that ends (or saves) the session (its subscriber writes the tokens, sent by a worker). Nothing for
 * an account gone meanwhile.
 */
async function providerLogoutEvent(
  deps: Pick<ProviderStorageDeps, 'db' | 'clock'>, app: Application, logouts: readonly ProviderLogout[], party: ProviderParty, tx: Tx,
): Promise<DomainEvent | undefined> {
  const { db, clock } = deps;
  const notices: LogoutNotice[] = [];
  for (const { clientId, sid } of logouts) {
    const client = await db.clients.find(app.id, clientId);
    const target = client ? logoutTargetOf(client.settings) : undefined;
    if (target && !(target.sessionRequired && sid === null)) notices.push({ clientId, sid, jti: randomUUID() });
  }
  const subject = logouts[0]?.subject;
  const record = notices.length === 0 || subject === undefined ? undefined : await db.records.find(app.id, { uuid: subject }, tx);
  if (!record || subject === undefined) return undefined;
  return event('oidc.backchannel_logout', app.id, clock.now(), actingOf({ ...party, entityId: record.id }), recordSubject(record.id),
    { clients: [...new Set(notices.map((n) => n.clientId))] }, { logouts: { subject, notices } });
}

/** What an app's logout owes, recorded on its own: for a logout the provider makes outside a request (none is known to happen). */
export async function oweProviderLogout(deps: ProviderStorageDeps, command: { app: Application; logouts: ProviderLogout[]; party: ProviderParty }): Promise<void> {
  await deps.work.run(async (uow) => {
    const owed = await providerLogoutEvent(deps, command.app, command.logouts, command.party, uow.tx);
    if (owed) uow.record(owed);
  });
}
