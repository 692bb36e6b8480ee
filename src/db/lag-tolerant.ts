import type { Sequelize } from 'sequelize';
import type { LagTolerantReads } from '../domain/storage';
import { defineModels } from './models';
import { createClientQueries } from './repositories/clients';
import { createFlowQueries } from './repositories/flows';
import { createOutboxQueries } from './repositories/outbox';
import { createRecordQueries } from './repositories/records';
import { createSocialQueries } from './repositories/social';
import { createVersionQueries } from './repositories/versions';
import { createSql } from './sql';
import { isDatabaseUnavailable, isSchemaMissing } from './unavailable';

type Queries = {
  flows: ReturnType<typeof createFlowQueries>;
  records: ReturnType<typeof createRecordQueries>;
  versions: ReturnType<typeof createVersionQueries>;
  clients: Pick<ReturnType<typeof createClientQueries>, 'list'>;
  social: ReturnType<typeof createSocialQueries>;
  outbox: ReturnType<typeof createOutboxQueries>;
};

/** The lag-tolerant reads (LagTolerantReads names them) of one database's queries. */
export function lagTolerantOf(q: Queries): LagTolerantReads {
  return {
    flows: { find: q.flows.find, latestVersion: q.flows.latestVersion },
    records: { searchPage: q.records.searchPage, findByIds: q.records.findByIds, count: q.records.count },
    profiles: { forEntities: q.social.profiles.forEntities },
    versions: {
      at: q.versions.at,
      deletedEntityId: q.versions.deletedEntityId,
      entityId: async (applicationId, uuid) => (await q.records.find(applicationId, { uuid }))?.id,
    },
    clients: { list: q.clients.list },
    providers: { list: q.social.providers.list },
    outbox: { backlog: q.outbox.backlog },
  };
}

/** The lag-tolerant reads on a replica's connections (only SELECTs are ever sent to it). */
export function replicaReads(sequelize: Sequelize): LagTolerantReads {
  const models = defineModels(sequelize);
  const sql = createSql(sequelize);
  const refuseWrites = () => Promise.reject(new Error('a replica takes no transactions'));
  return lagTolerantOf({
    flows: createFlowQueries(models, sql),
    records: createRecordQueries(models, sql),
    versions: createVersionQueries(models, sql),
    clients: createClientQueries(models, sql, refuseWrites),
    social: createSocialQueries(models, sql),
    outbox: createOutboxQueries(models, sql),
  });
}

export interface Replica { name: string; reads: LagTolerantReads }

/** How long a replica that failed is left alone before a read tries it again. */
export const REPLICA_PAUSE_MS = 5_000;

/**
 * The lag-tolerant reads spread over `replicas` in turn, each answered by the primary instead when
 * its replica cannot: one that is unreachable or lacks part of the schema (it has not yet applied
 * a migration, or does not copy this database) is left alone for REPLICA_PAUSE_MS, and
 * `replicaFailed` says so, once per pause. A flow version the replica does not have yet (imported
 * a moment ago) is read from the primary: versions never change, so both answers are the same
 * once it has. Any other error (a statement timeout) is the read's own answer.
 */
export function routedReads(
  primary: LagTolerantReads, replicas: Replica[], replicaFailed: (replica: string, err: unknown) => void, now = () => Date.now(),
): LagTolerantReads {
  if (replicas.length === 0) return primary;
  const pausedUntil = new Map<Replica, number>();
  let turn = 0;
  const next = (): Replica | undefined => {
    for (let i = 0; i < replicas.length; i++) {
      const replica = replicas[turn++ % replicas.length];
      if ((pausedUntil.get(replica) ?? 0) <= now()) return replica;
    }
    return undefined;
  };
  async function read(group: keyof LagTolerantReads, method: string, args: unknown[]): Promise<unknown> {
    const call = (reads: LagTolerantReads) => (reads[group] as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method](...args);
    const replica = next();
    if (!replica) return call(primary);
    let answer: unknown;
    try {
      answer = await call(replica.reads);
    } catch (err) {
      if (!isDatabaseUnavailable(err) && !isSchemaMissing(err)) throw err;
      pausedUntil.set(replica, now() + REPLICA_PAUSE_MS);
      replicaFailed(replica.name, err);
      return call(primary);
    }
    return answer === undefined && group === 'flows' ? call(primary) : answer;
  }
  // the same groups and methods as the primary's, each a routed read
  return Object.fromEntries(Object.entries(primary).map(([group, methods]) => [group, Object.fromEntries(
    Object.keys(methods).map((method) => [method, (...args: unknown[]) => read(group as keyof LagTolerantReads, method, args)]),
  )])) as unknown as LagTolerantReads;
}
