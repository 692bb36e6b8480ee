import type { Clock } from '../../domain/clients';
import { event, type Acting } from '../../domain/events';
import { Refusal } from '../../domain/refusal';
import type { SecretBox } from '../../domain/secrets';
import { firstSigningKeys, newSigningKey, RETIRED_KEY_SECONDS } from '../../domain/signing-keys';
import type { Storage } from '../../domain/storage';
import { SIGNING_ALGS, type StoredSigningKey } from '../../domain/storage/signing-keys';
import type { Work } from '../unit-of-work';

/** How long a next key is published before it may sign: a day of the verifiers' JWKS caches. */
export const NEXT_KEY_SECONDS = 86_400;

/** What the signing keys' use cases need. */
export interface KeyDeps { db: Storage; box: SecretBox; clock: Clock; work: Work }


const retiredAfter = (clock: Clock) => new Date(clock.now().getTime() - RETIRED_KEY_SECONDS * 1000);

/**
 * The application's published signing keys (docs/openid-connect.md#keys): current, next, and
 * retired ones still in their time. An application without keys gets its first ones (a current and
 * a next key of each algorithm): of pods doing so at once, one writes them and the others read them.
 */
export async function signingKeys(deps: KeyDeps, applicationId: number): Promise<StoredSigningKey[]> {
  const { db, box, clock, work } = deps;
  const published = await db.signingKeys.published(applicationId, retiredAfter(clock));
  if (published.some((k) => k.slot !== null)) return published;
  await work.run((uow) => db.signingKeys.add(firstSigningKeys(box, applicationId, clock.now()), uow.tx));
  return db.signingKeys.published(applicationId, retiredAfter(clock));
}

/**
 * Rotates the application's keys (`gatehouse keys:rotate`): for each algorithm the next key, which
 * the JWKS has published since the last rotation, signs from now on; the current key retires and
 * stays published for RETIRED_KEY_SECONDS; a new next key is published. Answers the keys that sign
 * now and the next ones. A rotation racing with another writes nothing and answers the other's.
 */
export async function rotateSigningKeys(deps: KeyDeps, command: { applicationId: number; applicationName: string; acting: Acting; force?: boolean }) {
  const { db, box, clock, work } = deps;
  const before = await signingKeys(deps, command.applicationId);
  // a next key signs only once the verifiers' caches of the JWKS have had a day to take it in
  const young = before.filter((k) => k.slot?.startsWith('next:') && clock.now().getTime() - k.createdAt.getTime() < NEXT_KEY_SECONDS * 1000);
  if (young.length > 0 && !command.force) {
    const ready = new Date(Math.max(...young.map((k) => k.createdAt.getTime())) + NEXT_KEY_SECONDS * 1000);
    throw new Refusal('nothing_to_do', `the next keys were published less than a day ago: verifiers may not have them yet. Rotate after ${ready.toISOString()}, or now with --force (tokens signed with them may be refused for a while)`);
  }
  await work.run(async (uow) => {
    const now = clock.now();
    const rotated: string[] = [];
    for (const alg of SIGNING_ALGS) {
      const next = before.find((k) => k.slot === `next:${alg}`);
      if (!next) continue;
      if (await db.signingKeys.rotate(command.applicationId, alg, next.kid, newSigningKey(box, command.applicationId, alg, `next:${alg}`, now), now, uow.tx)) {
        rotated.push(next.kid);
      }
    }
    if (rotated.length > 0) {
      uow.record(event('keys.rotated', command.applicationId, now, command.acting, { kind: 'application', id: command.applicationName }, { signing: rotated }));
    }
  });
  const after = await db.signingKeys.published(command.applicationId, retiredAfter(clock));
  return {
    current: after.filter((k) => k.slot?.startsWith('current:')).map((k) => ({ kid: k.kid, alg: k.alg })),
    next: after.filter((k) => k.slot?.startsWith('next:')).map((k) => ({ kid: k.kid, alg: k.alg })),
    retired: after.filter((k) => k.slot === null).map((k) => ({ kid: k.kid, alg: k.alg, retiredAt: k.retiredAt })),
  };
}
