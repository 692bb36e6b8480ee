import type { Logger } from '../logger';
import type { ReplicaEvents, ReplicaHealth } from './lag-tolerant';

/**
 * Says in the log that a replica cannot answer, once per pause, and when it answers again (its
 * host, port and database, never its credentials): the primary answers its reads meanwhile.
 */
export const logReplicas = (logger: Logger): ReplicaEvents => ({
  failed: (replica, err, pauseMs, failures) => logger.warn(
    { replica, reason: err instanceof Error ? err.message : String(err), failures },
    `a database replica cannot answer: the primary answers its reads for the next ${pauseMs / 1000} s, then one read tries the replica again`,
  ),
  answered: (replica) => logger.info({ replica }, 'a database replica answers again: the lag-tolerant reads go to it again'),
});

const TROUBLE: Record<NonNullable<ReplicaHealth['trouble']>, string> = {
  no_answer: 'did not answer in time',
  unreachable: 'is unreachable',
  schema_behind: 'lacks part of the schema',
};

/**
 * The readiness check of the replicas (DATABASE_READ_URL): `true` while each takes its reads, and
 * while one is left alone a note that names it by its place in the list (never its host) and says
 * when it is tried again. A note, not a failure: the primary answers those reads, so the pod serves.
 * It reports what the reads have met and sends nothing to a replica (a hung one would hold /readyz).
 */
export function replicaCheck(health: ReplicaHealth[]): true | { degraded: string } {
  const alone = health.filter((r) => !r.answering);
  if (alone.length === 0) return true;
  return {
    degraded: alone.map((r) => `replica ${r.position} of ${health.length} ${TROUBLE[r.trouble ?? 'unreachable']} (${r.failures} ${r.failures === 1 ? 'try' : 'tries'} in a row): `
      + `the primary answers its reads, ${r.retryInMs ? `and a read tries it again in ${Math.ceil(r.retryInMs / 1000)} s` : 'and the next read tries it again'}`).join('; '),
  };
}
