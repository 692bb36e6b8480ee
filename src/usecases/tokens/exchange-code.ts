import type { Origin } from '../../domain/events';
import type { Application } from '../../domain/storage/applications';
import type { Client } from '../../domain/clients';
import { ownerOf, type StoredCredential } from '../../domain/storage/credentials';
import { refusesCredential, type UserRecord } from '../../domain/storage/records';
import { randomToken, sha256Hex } from '../../domain/secrets';
import { proofOf, type Proof, type TokenPair } from '../../domain/tokens';
import { Refusal } from '../../domain/refusal';
import type { UnitOfWork } from '../../domain/ports';
import { secondFactorPolicy, type SecondFactorMethod } from '../../domain/second-factor';
import type { Services } from '../services';
import { revokeFamily } from './families';
import { enrollRow, pausedFor, pausedRow, sentToEnroll } from '../login/second-factor-step';
import type { Paused } from '../login/call';
import { secondFactorsOf } from '../factors/second-factors-of';

export type ExchangeDeps = Pick<Services, 'db' | 'clock' | 'work' | 'tokens' | 'box'>;

/** An authorization code presented by `client` with the redirect URI it names. */
/** `origin`: where the code came from, for the event of a replayed code's family ended. */
export interface ExchangeCommand { app: Application; client: Client; code: string; redirectUri: string; origin?: Origin }

/** What spending a code came to: its pair (and the record it was for), or why not. */
export type Exchange =
  | { pair: TokenPair; entityId: number | null }
  | { error: 'denied'; replayed?: { family: string; entityId: number | null } | null }
  | { error: 'mismatch'; expected: string | null }
  | { error: 'disabled' }
  | { error: 'second_factor'; mfaToken: string; methods: SecondFactorMethod[] }
  | { error: 'enroll'; enrollToken: string };

/**
 * Spends a code in `uow` and issues its pair, or says why not: inside the unit of work of a larger
 * change too (a password reset spends its code and sets the password in one transaction). Then
 * `settleExchange`. With `pauseOwed`, a password reset's code of an account with a second factor
 * gives no pair: an mfa_token that mfa_verify_native turns into that pair with the second factor
 * (knowing the mailbox is not the second factor).
 */
export async function redeemCode(deps: Pick<ExchangeDeps, 'box' | 'clock' | 'db' | 'tokens'>, uow: UnitOfWork, command: ExchangeCommand, options: { pauseOwed?: boolean } = {}): Promise<Exchange> {
  const { db, clock, tokens, box } = deps;
  const { app, client, redirectUri } = command;
  const { tx } = uow;
  const spent = await spendCode(deps, uow, command);
  if ('error' in spent) return spent;
  const { found, record, proof, family } = spent;
  const state = found.extra?.transaction_state;
  const methods = options.pauseOwed && record && proof?.password_reset ? await secondFactorsOf(db, app, record.id) : [];
  if (record && methods.length > 0) {
    const row = pausedRow(box, { app, client, entityId: record.id, redirectUri, methods }, {
      factors: [], also: {}, exchange: { family, proof, ...(state !== undefined && { transactionState: state }) },
    });
    await tokens.issueAll([row], tx);
    return { error: 'second_factor', mfaToken: row.value, methods };
  }
  // a second factor required, and the account has none: the mailbox alone gets no session, only a way to add one
  if (options.pauseOwed && record && proof?.password_reset && secondFactorPolicy(app) === 'required') {
    const row = enrollRow({ app, client, entityId: record.id }, clock.now());
    await tokens.issueAll([row], tx);
    return { error: 'enroll', enrollToken: row.value };
  }
  const pair = await tokens.issuePair(app, client, found.entityId, family, tx, proof);
  return { pair: state === undefined ? pair : { ...pair, transactionState: state }, entityId: found.entityId };
}

/** A code spent by its client in `uow`: its row, its record (locked, not disabled), the proof it hands on and its family; or why not. */
export type SpentCode = { found: StoredCredential; record: UserRecord | undefined; proof: Proof | null; family: string };

/**
 * Spends an authorization code in `uow` (the one conditional UPDATE: under concurrency one caller
 * wins), when it is the client's and is presented with its redirect URI.
 */
export async function spendCode({ db, clock }: Pick<ExchangeDeps, 'clock' | 'db'>, uow: UnitOfWork, command: ExchangeCommand): Promise<SpentCode | Extract<Exchange, { error: 'denied' | 'mismatch' | 'disabled' }>> {
  const { app, client, code, redirectUri } = command;
  const { tx } = uow;
  const hash = sha256Hex(code);
  const found = await db.credentials.find(app.id, 'authorization_code', hash, tx);
  if (!found || ownerOf(found) !== client.id) return { error: 'denied' };
  if (found.redirectUri !== redirectUri) return { error: 'mismatch', expected: found.redirectUri };
  if (!(await db.credentials.consume(app.id, 'authorization_code', hash, clock.now(), tx, client.id))) {
    return { error: 'denied', replayed: found.usedAt && found.family ? { family: found.family, entityId: found.entityId } : null };
  }
  // the record's lock orders this with a disable: a code of a disabled user (mailed after it,
  // or issued by a sign-in in flight while it committed) gets nothing
  const record = found.entityId === null ? undefined : await db.records.findForUpdate(app.id, found.entityId, tx);
  if (record && refusesCredential(record, found.createdAt, clock.now())) return { error: 'disabled' };
  return { found, record, proof: proofOf(found), family: found.family ?? randomToken(16) };
}

/** After the work of an exchange: its pair, or its refusal (a replayed code's family revoked first). */
export async function settleExchange(deps: Pick<ExchangeDeps, 'clock' | 'db' | 'work'>, command: Pick<ExchangeCommand, 'app' | 'redirectUri' | 'origin'>, outcome: Exchange): Promise<TokenPair | Paused> {
  if ('pair' in outcome) return outcome.pair;
  if (outcome.error === 'mismatch') {
    throw new Refusal('redirect_mismatch', 'redirect_uri differs from the one used to obtain the code', { received: command.redirectUri, expected: outcome.expected });
  }
  // a password reset's code of an account that owes a second factor: the exchange pauses as a sign-in does
  if (outcome.error === 'enroll') return sentToEnroll(outcome.enrollToken, 'the password reset code is right');
  if (outcome.error === 'second_factor') return pausedFor(outcome.mfaToken, 'the password reset code is right', outcome.methods);
  if (outcome.error === 'disabled') throw new Refusal('no_grant', 'the user of this authorization code is disabled: it gets no tokens until an operator enables it again');
  if (outcome.replayed) await revokeFamily(deps, command.app, { ...outcome.replayed, origin: command.origin ?? {} });
  throw new Refusal('no_grant', 'the authorization code is invalid, expired, already used, or was issued for another client');
}

/**
 * grant_type=authorization_code. The code must be live, issued for the client, and presented with
 * the redirect URI it was issued with. A code presented again after its exchange revokes the tokens
 * it was exchanged for (RFC 6749 4.1.2).
 */
export async function exchangeCode(deps: ExchangeDeps, command: ExchangeCommand): Promise<TokenPair | Paused> {
  return settleExchange(deps, command, await deps.work.run((uow) => redeemCode(deps, uow, command, { pauseOwed: true })));
}
