import { event, recordSubject, type Origin } from '../../domain/events';
import type { Application } from '../../domain/storage/applications';
import type { Services } from '../services';

/** A spent token of a family that came back: whose it was and where it came from. */
export interface Leak { family: string; entityId: number | null; origin: Origin }

/**
 * Spends a whole family at once: a spent refresh token, code or SDK session came back, so it has
 * leaked. Gatehouse itself ends it (the actor is the system; the origin is the request that
 * brought the token back), and the account's activity shows it when it ended tokens that were
 * still live (the same token brought back again records nothing more).
 */
export const revokeFamily = ({ db, clock, work }: Pick<Services, 'db' | 'clock' | 'work'>, app: Application, leak: Leak) =>
  work.run(async (uow) => {
    const now = clock.now();
    const revoked = await db.credentials.revokeFamily(app.id, leak.family, now, uow.tx);
    if (leak.entityId !== null && revoked > 0) {
      uow.record(event('token.reuse_detected', app.id, now, { actor: { kind: 'system' }, origin: leak.origin }, recordSubject(leak.entityId), { revoked }));
    }
    return revoked;
  }, { readCommitted: true });
