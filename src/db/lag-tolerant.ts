import type { Sequelize } from 'sequelize';
import type { LagTolerantReads } from '../domain/storage';
import type { Models } from './models';
import { createFlowQueries } from './repositories/flows';
import { createOutboxQueries } from './repositories/outbox';
import { createRecordQueries } from './repositories/records';
import { createSocialQueries } from './repositories/social';
import { createVersionQueries } from './repositories/versions';
import { createSql } from './sql';
import { isDatabaseUnavailable, isNoAnswer, isSchemaMissing } from './unavailable';

type Queries = {
  flows: ReturnType<typeof createFlowQueries>;
  records: ReturnType<typeof createRecordQueries>;
  versions: ReturnType<typeof createVersionQueries>;
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
    providers: { list: q.social.providers.list },
    outbox: { backlog: q.outbox.backlog },
  };
}

/**
 * The time a replica has to answer one statement of a lag-tolerant read, waiting for a connection
 * and connecting included; a statement with a limit of its own (entity.find and entity.count,
 * ENTITY_QUERY_TIMEOUT_MS) has this much beyond that limit. Past it the read goes to the primary.
 */
export const REPLICA_ANSWER_MS = 1_500;

/**
 * Models whose every use throws: a replica's reads are statements of sql.ts, each bounded in time
 * (REPLICA_ANSWER_MS); a Sequelize model's query would wait as long as a hung server makes it.
 */
const refusingModels = new Proxy({}, {
  get: (_models, model) => new Proxy({}, {
    get: (_model, method) => () => {
      throw new Error(`${String(model)}.${String(method)} was called on a replica: a lag-tolerant read must be a statement of sql.ts, bounded in time`);
    },
  }),
}) as Models;

/** The lag-tolerant reads on a replica's connections (only SELECTs are ever sent to it), each statement bounded in time. */
export function replicaReads(sequelize: Sequelize, answerWithinMs = REPLICA_ANSWER_MS): LagTolerantReads {
  const sql = createSql(sequelize, { answerWithinMs });
  return lagTolerantOf({
    flows: createFlowQueries(refusingModels, sql),
    records: createRecordQueries(refusingModels, sql),
    versions: createVersionQueries(refusingModels, sql),
    social: createSocialQueries(refusingModels, sql),
    outbox: createOutboxQueries(refusingModels, sql),
  });
}

export interface Replica { name: string; reads: LagTolerantReads }

/** How long a replica that failed is first left alone before one read tries it again. */
export const REPLICA_PAUSE_MS = 5_000;
/** The longest a replica that keeps failing is left alone between two tries. */
export const REPLICA_PAUSE_MAX_MS = 30_000;

/**
 * How long a replica that has failed `failures` times in a row is left alone: REPLICA_PAUSE_MS,
 * doubling with each failed try after it, at most REPLICA_PAUSE_MAX_MS (5, 10, 20, 30, 30 s…).
 */
export function replicaPauseMs(failures: number): number {
  if (failures < 1) return 0;
  return Math.min(REPLICA_PAUSE_MAX_MS, REPLICA_PAUSE_MS * 2 ** Math.min(failures - 1, 16));
}

/** Why a replica is left alone: it did not answer in time (hung), could not be reached, or lacks part of the schema. */
export type ReplicaTrouble = 'no_answer' | 'unreachable' | 'schema_behind';

/** What is known of one replica, for readiness and the log. */
export interface ReplicaHealth {
  name: string;
  /** 1-based position in DATABASE_READ_URL. */
  position: number;
  /** True while its reads go to it; false while it is left alone (the primary answers its reads). */
  answering: boolean;
  /** Failed tries in a row (0 while answering). */
  failures: number;
  trouble?: ReplicaTrouble;
  /** While left alone: milliseconds until a read tries it again (0: the next read does). */
  retryInMs?: number;
}

/** What the routed reads say of the replicas (the log, by default). */
export interface ReplicaEvents {
  /** `replica` could not answer: the primary answers its reads for `pauseMs`, then one read tries it again. */
  failed(replica: string, err: unknown, pauseMs: number, failures: number): void;
  /** `replica`, left alone after failing, answered a read again. */
  answered(replica: string): void;
}

const trouble = (err: unknown): ReplicaTrouble | undefined =>
  isNoAnswer(err) ? 'no_answer' : isSchemaMissing(err) ? 'schema_behind' : isDatabaseUnavailable(err) ? 'unreachable' : undefined;

interface ReplicaState { failures: number; pausedUntil: number; probing: boolean; trouble?: ReplicaTrouble; changes: number }

export interface RoutedReads {
  reads: LagTolerantReads;
  /** Each replica's state, in DATABASE_READ_URL's order (empty without replicas). */
  health(): ReplicaHealth[];
}

/**
 * The lag-tolerant reads spread over `replicas` in turn, each answered by the primary instead when
 * its replica cannot. A replica that does not answer in time (each statement is bounded: see
 * replicaReads), is unreachable, or lacks part of the schema (it has not yet applied a migration,
 * or does not copy this database) is left alone for replicaPauseMs(failures in a row); once the
 * pause is over, one read tries it (the others still go to the primary): if it answers, every read
 * goes to it again, otherwise it is left alone for a longer pause. `events.failed` says so once per
 * pause, `events.answered` when it is back. Reads that were already waiting on a replica when it
 * failed each fall back too, and count as that one failure. A flow version the replica does not
 * have yet (imported a moment ago) is read from the primary: versions never change, so both
 * answers are the same once it has. Any other error (a statement that ran out of its own time, on
 * the server) is the read's own answer.
 */
export function routedReads(
  primary: LagTolerantReads, replicas: Replica[], events: ReplicaEvents, now = () => Date.now(),
): RoutedReads {
  const states = new Map<Replica, ReplicaState>(replicas.map((r) => [r, { failures: 0, pausedUntil: 0, probing: false, changes: 0 }]));
  const health = (): ReplicaHealth[] => replicas.map((replica, i) => {
    const state = states.get(replica)!;
    return state.failures === 0
      ? { name: replica.name, position: i + 1, answering: true, failures: 0 }
      : { name: replica.name, position: i + 1, answering: false, failures: state.failures, trouble: state.trouble, retryInMs: Math.max(0, state.pausedUntil - now()) };
  });
  if (replicas.length === 0) return { reads: primary, health };
  let turn = 0;
  /** The replica for the next read: one that answers, or one whose pause is over and that no other read is trying. */
  const next = (): Replica | undefined => {
    for (let i = 0; i < replicas.length; i++) {
      const replica = replicas[turn++ % replicas.length];
      const state = states.get(replica)!;
      if (state.failures === 0) return replica;
      if (!state.probing && state.pausedUntil <= now()) {
        state.probing = true;
        return replica;
      }
    }
    return undefined;
  };
  async function read(group: keyof LagTolerantReads, method: string, args: unknown[]): Promise<unknown> {
    const call = (reads: LagTolerantReads) => (reads[group] as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method](...args);
    const replica = next();
    if (!replica) return call(primary);
    const state = states.get(replica)!;
    const seen = state.changes;
    let answer: unknown;
    try {
      answer = await call(replica.reads);
    } catch (err) {
      const why = trouble(err);
      if (!why) {
        answered(replica, state, seen); // the server answered, if only with an error
        throw err;
      }
      // one failure per pause: reads that waited on it alongside this one fall back and count as this one
      if (state.changes === seen) {
        state.failures++;
        state.changes++;
        state.probing = false;
        state.trouble = why;
        state.pausedUntil = now() + replicaPauseMs(state.failures);
        events.failed(replica.name, err, replicaPauseMs(state.failures), state.failures);
      }
      return call(primary);
    }
    answered(replica, state, seen);
    return answer === undefined && group === 'flows' ? call(primary) : answer;
  }
  /** A read answered: a replica that was being tried is back (unless another read saw it fail since this one began). */
  function answered(replica: Replica, state: ReplicaState, seen: number): void {
    if (state.failures === 0 || state.changes !== seen) return;
    Object.assign(state, { failures: 0, pausedUntil: 0, probing: false, trouble: undefined, changes: state.changes + 1 });
    events.answered(replica.name);
  }
  // the same groups and methods as the primary's, each a routed read
  const reads = Object.fromEntries(Object.entries(primary).map(([group, methods]) => [group, Object.fromEntries(
    Object.keys(methods).map((method) => [method, (...args: unknown[]) => read(group as keyof LagTolerantReads, method, args)]),
  )])) as unknown as LagTolerantReads;
  return { reads, health };
}
