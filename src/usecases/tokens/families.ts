import type { Application } from '../../domain/storage/applications';
import type { Services } from '../services';

/** Spends a whole family at once: a spent refresh token, code or SDK session came back, so it has leaked. */
export const revokeFamily = ({ db, clock, work }: Pick<Services, 'db' | 'clock' | 'work'>, app: Application, family: string) =>
  work.run(({ tx }) => db.credentials.revokeFamily(app.id, family, clock.now(), tx), { readCommitted: true });
