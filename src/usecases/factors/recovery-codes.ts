import type { Client } from '../../domain/clients';
import type { UserRecord } from '../../domain/storage/records';
import type { UnitOfWork } from '../../domain/ports';
import { newRecoveryCode, recoveryCodeKey, RECOVERY_CODES } from '../../domain/second-factor';
import type { CallContext } from '../services';

/** A recovery code lives as long as the account keeps its authenticator: a hundred years, for the store's sweep. */
const RECOVERY_CODE_SECONDS = 100 * 365 * 86_400;

/**
 * Replaces the account's recovery codes with RECOVERY_CODES new ones, in `uow`: stored as keyed
 * hashes only (each of 49 random bits, guessed against the account's budget), each single use. Answers
 * them, to be shown once.
 */
export async function renewRecoveryCodes(ctx: CallContext<'box' | 'clock' | 'db' | 'tokens'>, uow: UnitOfWork, record: UserRecord, client: Client): Promise<string[]> {
  const { db, clock, tokens, box } = ctx.services;
  await db.credentials.revokeForRecord(ctx.app.id, record.id, ['recovery_code'], null, clock.now(), uow.tx);
  const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
  await tokens.issueAll(codes.map((code) => ({
    issue: { kind: 'recovery_code' as const, app: ctx.app, entityId: record.id, client, seconds: RECOVERY_CODE_SECONDS },
    value: recoveryCodeKey(box, code),
  })), uow.tx);
  return codes;
}
