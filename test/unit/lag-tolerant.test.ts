import { ConnectionRefusedError } from 'sequelize';
import { REPLICA_PAUSE_MS, routedReads } from '../../src/db/lag-tolerant';
import { StatementTimeoutError } from '../../src/db/sql';
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
    clients: { list: answer([]) },
    providers: { list: answer([]) },
    outbox: { backlog: answer([]) },
  };
}
const refused = () => new ConnectionRefusedError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
/** A count through `routed`: which reads it ran. */
const where = (routed: LagTolerantReads) => async () => {
  log.length = 0;
  await routed.records.count(1, { where: '1', values: [] }, 1000);
  return [...log];
};

describe('the lag-tolerant reads routed to replicas', () => {
  it('are the primary\'s own without a replica', () => {
    const primary = reads('primary');
    expect(routedReads(primary, [], () => {})).toBe(primary);
  });

  it('go to the replicas in turn', async () => {
    const [primary, a, b] = [reads('primary'), reads('a'), reads('b')];
    const read = where(routedReads(primary, [{ name: 'a', reads: a }, { name: 'b', reads: b }], () => {}));
    expect([await read(), await read(), await read()]).toEqual([['a'], ['b'], ['a']]);
  });

  it('a replica that cannot be reached: the primary answers, the replica is left alone for a pause, then tried again', async () => {
    let now = 0;
    const failures: string[] = [];
    const [primary, a] = [reads('primary'), reads('a', { fail: refused })];
    const routed = routedReads(primary, [{ name: 'a', reads: a }], (replica) => failures.push(replica), () => now);
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
    const read = where(routedReads(primary, [{ name: 'a', reads: a }, { name: 'b', reads: b }], () => {}));
    expect(await read()).toEqual(['a', 'primary']);
    expect([await read(), await read()]).toEqual([['b'], ['b']]);
  });

  it('any other error is the read\'s answer: a statement that ran out of time is not run again on the primary', async () => {
    const [primary, a] = [reads('primary'), reads('a', { fail: () => new StatementTimeoutError(1000) })];
    const routed = routedReads(primary, [{ name: 'a', reads: a }], () => {});
    await expect(routed.records.count(1, { where: '1', values: [] }, 1000)).rejects.toBeInstanceOf(StatementTimeoutError);
    expect(primary.calls).toEqual([]);
  });

  it('a flow version the replica does not have yet is read from the primary; one it has is not', async () => {
    const flow = { name: 'standard', version: 2, checksum: 'c', definition: {} };
    const [primary, a] = [reads('primary', { flow }), reads('a')];
    const routed = routedReads(primary, [{ name: 'a', reads: a }], () => {});
    expect(await routed.flows.find(1, 'standard', 2)).toBe(flow);
    expect(a.calls).toEqual(['a']);
    expect(primary.calls).toEqual(['primary']);
    const [primary2, b] = [reads('primary'), reads('b', { flow })];
    expect(await routedReads(primary2, [{ name: 'b', reads: b }], () => {}).flows.find(1, 'standard', 2)).toBe(flow);
    expect(primary2.calls).toEqual([]);
  });
});
