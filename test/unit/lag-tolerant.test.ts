import { ConnectionRefusedError } from 'sequelize';
import { REPLICA_PAUSE_MAX_MS, REPLICA_PAUSE_MS, replicaPauseMs, routedReads, type ReplicaEvents } from '../../src/db/lag-tolerant';
import { answerWithin, NoAnswerError, StatementTimeoutError } from '../../src/db/sql';
import { isDatabaseUnavailable } from '../../src/db/unavailable';
import type { LagTolerantReads } from '../../src/domain/storage';

/** Which reads ran, in order, by the name of what ran them. */
const log: string[] = [];

/** Reads that answer `name` for a count, and `flow` for a flow version; `fail` makes every read throw it. */
function reads(name: string, options: { flow?: object; fail?: () => Error } = {}): LagTolerantReads & { calls: string[] } {
  const calls: string[] = [];
  const answer = <T>(value: T) => async () => {
    calls.push(name);
    log.push(name);
    if (options.fail) throw options.fail();
    return value;
  };
  return {
    calls,
    flows: { find: answer(options.flow as never), latestVersion: answer(undefined) },
    records: { searchPage: answer([]), findByIds: answer([]), count: answer(name.length) },
    profiles: { forEntities: answer(new Map()) },
    versions: { at: answer(undefined), deletedEntityId: answer(undefined), entityId: answer(undefined) },
    providers: { list: answer([]) },
    outbox: { backlog: answer([]) },
  };
}
/** Events that say nothing. */
const quiet: ReplicaEvents = { failed: () => {}, answered: () => {} };
const refused = () => new ConnectionRefusedError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
/** A count through `routed`: which reads it ran. */
const where = (routed: LagTolerantReads) => async () => {
  log.length = 0;
  await routed.records.count(1, undefined, 1000);
  return [...log];
};

describe('the lag-tolerant reads routed to replicas', () => {
  it('are the primary\'s own without a replica', () => {
    const primary = reads('primary');
    expect(routedReads(primary, [], quiet).reads).toBe(primary);
  });

  it('go to the replicas in turn', async () => {
    const [primary, a, b] = [reads('primary'), reads('a'), reads('b')];
    const read = where(routedReads(primary, [{ name: 'a', reads: a }, { name: 'b', reads: b }], quiet).reads);
    expect([await read(), await read(), await read()]).toEqual([['a'], ['b'], ['a']]);
  });

  it('a replica that cannot be reached: the primary answers, the replica is left alone for a pause, then tried again', async () => {
    let now = 0;
    const failures: string[] = [];
    const [primary, a] = [reads('primary'), reads('a', { fail: refused })];
    const routed = routedReads(primary, [{ name: 'a', reads: a }], { ...quiet, failed: (replica) => failures.push(replica) }, () => now).reads;
    const read = where(routed);
    expect(await read()).toEqual(['a', 'primary']);
    expect(await read()).toEqual(['primary']);
    now += REPLICA_PAUSE_MS;
    expect(await read()).toEqual(['a', 'primary']);
    expect(failures).toEqual(['a', 'a']);
  });

  it('a replica without the schema (a migration not applied yet) is left alone the same way', async () => {
    const missingTable = () => Object.assign(new Error("Table 'gh.entities' doesn't exist"), { errno: 1146 });
    const [primary, a, b] = [reads('primary'), reads('a', { fail: missingTable }), reads('b')];
    const read = where(routedReads(primary, [{ name: 'a', reads: a }, { name: 'b', reads: b }], quiet).reads);
    expect(await read()).toEqual(['a', 'primary']);
    expect([await read(), await read()]).toEqual([['b'], ['b']]);
  });

  it('any other error is the read\'s answer: a statement that ran out of time is not run again on the primary', async () => {
    const [primary, a] = [reads('primary'), reads('a', { fail: () => new StatementTimeoutError(1000) })];
    const routed = routedReads(primary, [{ name: 'a', reads: a }], quiet).reads;
    await expect(routed.records.count(1, undefined, 1000)).rejects.toBeInstanceOf(StatementTimeoutError);
    expect(primary.calls).toEqual([]);
  });

  it('a flow version the replica does not have yet is read from the primary; one it has is not', async () => {
    const flow = { name: 'standard', version: 2, checksum: 'c', definition: {} };
    const [primary, a] = [reads('primary', { flow }), reads('a')];
    const routed = routedReads(primary, [{ name: 'a', reads: a }], quiet).reads;
    expect(await routed.flows.find(1, 'standard', 2)).toBe(flow);
    expect(a.calls).toEqual(['a']);
    expect(primary.calls).toEqual(['primary']);
    const [primary2, b] = [reads('primary'), reads('b', { flow })];
    expect(await routedReads(primary2, [{ name: 'b', reads: b }], quiet).reads.flows.find(1, 'standard', 2)).toBe(flow);
    expect(primary2.calls).toEqual([]);
  });
});

describe('a replica that keeps failing is left alone longer each time', () => {
  it('replicaPauseMs: 5 s after the first failure, doubling with each failed try, at most REPLICA_PAUSE_MAX_MS', () => {
    expect([0, 1, 2, 3, 4, 5, 50].map(replicaPauseMs)).toEqual([0, 5_000, 10_000, 20_000, 30_000, 30_000, 30_000]);
    expect(REPLICA_PAUSE_MS).toBe(5_000);
    expect(REPLICA_PAUSE_MAX_MS).toBe(30_000);
  });

  /** A replica whose reads fail while `state.down`, and wait for `state.gate` (when set) before they answer. */
  function switchable(name: string) {
    const state: { down: boolean; gate?: Promise<void> } = { down: true };
    const base = reads(name, { fail: () => new NoAnswerError(1500) });
    const count = async () => {
      log.push(name);
      await state.gate;
      if (state.down) throw new NoAnswerError(1500);
      return 42;
    };
    return { state, reads: { ...base, records: { ...base.records, count } } as LagTolerantReads };
  }

  it('a replica that does not answer: the primary answers, one read tries it after each pause, the pause grows, and it is used again once it answers', async () => {
    let now = 0;
    const events: string[] = [];
    const primary = reads('primary');
    const a = switchable('a');
    const routed = routedReads(primary, [{ name: 'a', reads: a.reads }], {
      failed: (replica, _err, pauseMs, failures) => events.push(`${replica} failed ${failures}: ${pauseMs}`),
      answered: (replica) => events.push(`${replica} answers`),
    }, () => now);
    const read = where(routed.reads);
    expect(await read()).toEqual(['a', 'primary']);
    expect(routed.health()).toEqual([{ name: 'a', position: 1, answering: false, failures: 1, trouble: 'no_answer', retryInMs: 5_000 }]);
    // while left alone, every read goes straight to the primary: none waits for the replica again
    for (let i = 0; i < 5; i++) expect(await read()).toEqual(['primary']);
    now += 4_999;
    expect(await read()).toEqual(['primary']);
    now += 1;
    expect(await read()).toEqual(['a', 'primary']); // tried once, still hung: left alone 10 s
    now += 5_000;
    expect(await read()).toEqual(['primary']);
    now += 5_000;
    expect(await read()).toEqual(['a', 'primary']); // 20 s now
    now += 20_000;
    a.state.down = false;
    expect(await read()).toEqual(['a']);
    expect(await read()).toEqual(['a']);
    expect(routed.health()).toEqual([{ name: 'a', position: 1, answering: true, failures: 0 }]);
    expect(events).toEqual(['a failed 1: 5000', 'a failed 2: 10000', 'a failed 3: 20000', 'a answers']);
    // failing again later starts from the first pause
    a.state.down = true;
    expect(await read()).toEqual(['a', 'primary']);
    expect(events.at(-1)).toBe('a failed 1: 5000');
  });

  it('once a pause is over, one read tries the replica while the others go on to the primary', async () => {
    let now = 0;
    const primary = reads('primary');
    const a = switchable('a');
    const routed = routedReads(primary, [{ name: 'a', reads: a.reads }], quiet, () => now);
    const count = () => routed.reads.records.count(1, undefined, 1000);
    await count();
    now += REPLICA_PAUSE_MS;
    let release!: () => void;
    a.state.gate = new Promise<void>((r) => (release = r));
    a.state.down = false;
    log.length = 0;
    const trying = count();
    const others = await Promise.all([count(), count(), count()]);
    expect(others).toEqual(['primary'.length, 'primary'.length, 'primary'.length]);
    expect(log).toEqual(['a', 'primary', 'primary', 'primary']);
    release();
    expect(await trying).toBe(42);
    log.length = 0;
    await Promise.all([count(), count()]);
    expect(log).toEqual(['a', 'a']);
  });

  it('reads that were waiting on a replica when it failed each fall back, and count as one failure', async () => {
    const failures: number[] = [];
    const primary = reads('primary');
    const a = switchable('a');
    a.state.down = false;
    let release!: () => void;
    a.state.gate = new Promise<void>((r) => (release = r));
    const routed = routedReads(primary, [{ name: 'a', reads: a.reads }], { ...quiet, failed: (_r, _e, _p, n) => failures.push(n) }, () => 0);
    const count = () => routed.reads.records.count(1, undefined, 1000);
    const waiting = [count(), count(), count()];
    a.state.down = true;
    release();
    expect(await Promise.all(waiting)).toEqual(['primary'.length, 'primary'.length, 'primary'.length]);
    expect(failures).toEqual([1]);
    expect(routed.health()[0]).toMatchObject({ failures: 1, retryInMs: REPLICA_PAUSE_MS });
  });

  it('a replica that answers a try with a statement error of its own is back (it answers), and the error is the read\'s answer', async () => {
    let now = 0;
    let fail: () => Error = refused;
    const primary = reads('primary');
    const a = reads('a', { fail: () => fail() });
    const routed = routedReads(primary, [{ name: 'a', reads: a }], quiet, () => now);
    await routed.reads.records.count(1, undefined, 1000);
    expect(routed.health()[0]).toMatchObject({ answering: false, trouble: 'unreachable' });
    now += REPLICA_PAUSE_MS;
    fail = () => new StatementTimeoutError(1000);
    await expect(routed.reads.records.count(1, undefined, 1000)).rejects.toBeInstanceOf(StatementTimeoutError);
    expect(routed.health()[0]).toMatchObject({ answering: true, failures: 0 });
  });
});

describe('a statement bounded in time (answerWithin)', () => {
  /** A pool of one fake connection whose statements answer when `answer` says so. */
  function fakePool(options: { acquireMs?: number } = {}) {
    const released: unknown[] = [];
    const destroyed: unknown[] = [];
    const connection = {
      query: () => undefined,
      destroy: jest.fn(),
      stream: { destroy: jest.fn() },
    };
    const pool = {
      getConnection: () => new Promise<typeof connection>((resolve) => setTimeout(() => resolve(connection), options.acquireMs ?? 0)),
      releaseConnection: (c: unknown) => void released.push(c),
      destroyConnection: async (c: unknown) => void destroyed.push(c),
    };
    return { pool, connection, released, destroyed };
  }

  it('a statement that answers in time: its answer, and the connection goes back to the pool', async () => {
    const { pool, connection, released, destroyed } = fakePool();
    expect(await answerWithin(pool, 200, async () => 'rows')).toBe('rows');
    expect(released).toEqual([connection]);
    expect(destroyed).toEqual([]);
  });

  it('a server that never answers: NoAnswerError after the bound, and the connection is closed and taken out of the pool', async () => {
    const { pool, connection, released, destroyed } = fakePool();
    const started = Date.now();
    await expect(answerWithin(pool, 100, () => new Promise(() => undefined))).rejects.toBeInstanceOf(NoAnswerError);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(released).toEqual([]);
    expect(destroyed).toEqual([connection]);
    expect(connection.destroy).toHaveBeenCalled();
    expect(connection.stream.destroy).toHaveBeenCalled();
  });

  it('a connection that comes too late (a connect the server never answers in time): NoAnswerError, and the connection goes back to the pool unused when it comes', async () => {
    const { pool, connection, released, destroyed } = fakePool({ acquireMs: 150 });
    const statement = jest.fn(async () => 'rows');
    await expect(answerWithin(pool, 50, statement)).rejects.toBeInstanceOf(NoAnswerError);
    await new Promise((r) => setTimeout(r, 200));
    expect(statement).not.toHaveBeenCalled();
    expect(released).toEqual([connection]);
    expect(destroyed).toEqual([]);
  });

  it('a NoAnswerError is the database being unavailable (so a replica is left alone, and the primary answers)', () => {
    expect(isDatabaseUnavailable(new NoAnswerError(100))).toBe(true);
  });
});
