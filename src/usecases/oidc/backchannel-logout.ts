import { logoutClaims, logoutTargetOf } from '../../domain/backchannel-logout';
import { signJwt } from '../../domain/jwt-signer';
import { webhookPayloadOf } from '../../domain/payloads';
import type { LogoutTransport } from '../../domain/ports';
import { privateJwkOf } from '../../domain/signing-keys';
import type { LogoutState, StoredLogout } from '../../domain/storage/logouts';
import { invalidField } from '../../domain/refusal';
import { signingKeys } from '../keys/signing-keys';
import type { Services } from '../services';
import type { Application } from '../../domain/storage/applications';

/** The most logout tokens one listing shows. */
export const MAX_LOGOUTS_LISTED = 100;

/**
 * Back-channel logout (docs/openid-connect.md#back-channel-logout), the sending side: the job of
 * one logout token owed to a client. Each attempt signs a fresh token (the same `jti`, a new `iat`)
 * with the application's current key of the algorithm the client's ID tokens use, and POSTs it
 * to the client's back-channel logout address as it is now, under the webhooks' rules. 200 or 204
 * is delivered; anything else is recorded and the job tried again, until its last attempt gives it up.
 */

type Deps = Pick<Services, 'db' | 'clock' | 'box' | 'work' | 'baseUrls'> & { transport: LogoutTransport };

/** What a logout job came to. */
export type LogoutJobResult =
  | { kind: 'delivered'; status: number }
  | { kind: 'failed'; why: string }
  | { kind: 'skipped'; why: string };

/** Thrown for an attempt that failed and is tried again (the job's retry). */
export class LogoutAttemptFailed extends Error {}

/** The first bytes of a receiver's answer kept with an attempt. */
const ANSWER_KEPT = 300;

export async function deliverLogout(deps: Deps, command: { outboxId: string; finalAttempt: boolean }): Promise<LogoutJobResult> {
  const { db, clock } = deps;
  const { outboxId, finalAttempt } = command;
  const row = await db.outbox.find(outboxId);
  if (!row || row.status !== 'pending') return { kind: 'skipped', why: 'sent already' };
  const jti = webhookPayloadOf(row.payload).logout;
  const logout = jti === undefined ? undefined : await db.logouts.find(jti);
  if (!logout || logout.state !== 'pending') {
    await db.outbox.completeAlone(outboxId, clock.now());
    return { kind: 'skipped', why: logout ? `${logout.state} already` : 'no such logout token (its account was erased, or it was purged)' };
  }
  // an attempt recorded, and the token finished (given up, or taken) or left for the next attempt; a finished token of an
  // erased account keeps no public id (the erasure told the apps already), in the same statement
  const record = async (attempt: { status: number | null; ms: number; answer: string }, state: LogoutState): Promise<void> => {
    const forget = state !== 'pending' && logout.accountId !== null && await db.erasures.erasedAt(logout.applicationId, logout.accountId) !== undefined;
    await db.logouts.recordAttemptAlone(logout.jti, { ...attempt, answer: attempt.answer.slice(0, ANSWER_KEPT), state, forgetSubject: forget }, clock.now());
    if (state === 'delivered') await db.outbox.completeAlone(outboxId, clock.now());
    else await db.outbox.recordFailureAlone(outboxId, attempt.answer.slice(0, ANSWER_KEPT), state === 'failed', clock.now());
  };
  const failed = finalAttempt ? 'failed' : 'pending';
  try {
    const app = await db.applications.findById(logout.applicationId);
    const client = app && await db.clients.find(app.id, logout.clientId);
    const target = client ? logoutTargetOf(client.settings) : undefined;
    if (!app || !client || !target) {
      // nowhere to send it any more: given up at once, and said why
      const why = 'the client has no back-channel logout address any more';
      await record({ status: null, ms: 0, answer: why }, 'failed');
      return { kind: 'failed', why };
    }
    const token = await logoutToken(deps, app, client.settings, logout);
    const attempt = await deps.transport.send(target.uri, token);
    const answered = attempt.kind === 'answered' ? attempt : undefined;
    const delivered = answered !== undefined && (answered.status === 200 || answered.status === 204);
    const shown = { status: answered?.status ?? null, ms: attempt.ms, answer: answered ? answered.answer : attempt.kind === 'refused' ? attempt.reason : '' };
    await record(shown, delivered ? 'delivered' : failed);
    if (delivered) return { kind: 'delivered', status: answered.status };
    const why = answered ? `answered ${answered.status}` : shown.answer;
    if (failed === 'pending') throw new LogoutAttemptFailed(`the logout token for ${logout.clientId} was not accepted (${why.slice(0, 100)}); it is tried again`);
    return { kind: 'failed', why };
  } catch (err) {
    if (err instanceof LogoutAttemptFailed) throw err;
    // anything else (no signing key, the database between two statements): counted as an attempt, given up on the last one
    await record({ status: null, ms: 0, answer: `not sent: ${(err as Error).message}` }, failed).catch(() => undefined);
    throw err;
  }
}

/** The logout token of one attempt: signed now with the current key of the client's ID tokens' algorithm (ES256 for FAPI 2.0, else its setting, else RS256). */
async function logoutToken(deps: Deps, app: { id: number; name: string }, settings: Record<string, string>, logout: StoredLogout): Promise<string> {
  const alg = settings.security_profile === 'fapi2' || settings.id_token_signed_response_alg === 'ES256' ? 'ES256' : 'RS256';
  const key = (await signingKeys(deps, app.id)).find((k) => k.slot === `current:${alg}`);
  if (!key) throw new Error(`the application has no current ${alg} signing key`);
  const claims = logoutClaims({ issuer: deps.baseUrls.of(app.name), clientId: logout.clientId, subject: logout.subject, sid: logout.sid, jti: logout.jti, now: deps.clock.now() });
  return signJwt(key, privateJwkOf(deps.box, key), 'logout+jwt', claims);
}

/** One logout token as the owner sees it (never the token itself: it is signed at each attempt). */
export interface LogoutView {
  id: string; clientId: string; subject: string | null; sid: string | null; state: StoredLogout['state']; attempts: number;
  createdAt: Date; lastAttemptAt: Date | null; lastStatus: number | null; lastMs: number | null; lastAnswer: string | null;
}

/** The latest logout tokens owed to a login client (newest first, at most `limit`), with their attempts. */
export async function listLogouts(deps: Pick<Services, 'db'>, command: { app: Application; clientId: string; limit?: number }): Promise<LogoutView[]> {
  const { db } = deps;
  const { app } = command;
  if (command.clientId.length > 64) throw invalidField('for_client_id', 'is not the client_id of a client of this application (/clients/list lists them)');
  const client = await db.clients.find(app.id, command.clientId);
  if (!client) throw invalidField('for_client_id', 'is not the client_id of a client of this application (/clients/list lists them)');
  const limit = Math.min(Math.max(command.limit ?? 20, 1), MAX_LOGOUTS_LISTED);
  return (await db.logouts.list(app.id, client.clientId, limit)).map((l) => ({
    id: l.jti, clientId: l.clientId, subject: l.subject, sid: l.sid, state: l.state, attempts: l.attempts, createdAt: l.createdAt,
    lastAttemptAt: l.lastAttemptAt, lastStatus: l.lastStatus, lastMs: l.lastMs, lastAnswer: l.lastAnswer,
  }));
}
