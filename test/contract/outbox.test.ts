import { randomUUID } from 'node:crypto';
import type { OutboxJob } from '../../src/domain/storage/outbox';
import { forEveryEngine } from '../helpers/contract';

// The outbox store's contract (OutboxStore): rows commit or roll back with their change, are
// finished once (one of 20 concurrent completions wins), count their failures, and are found again
// by the relay while pending and swept once done.

forEveryEngine('outbox store', (storage) => {
  /** A webhooks fan-out job, or a snapshot's. */
  const job = (queue: 'webhooks' | 'versions' = 'webhooks'): OutboxJob => (queue === 'versions' ? {
    id: randomUUID(), applicationId: storage().appId, queue, name: 'snapshot',
    payload: { entityId: 1, uuid: randomUUID(), version: 1, validFrom: new Date().toISOString(), snapshot: {} },
  } : { id: randomUUID(), applicationId: storage().appId, queue, name: 'fan-out', payload: { type: 'user.updated', uuid: randomUUID() } });
  const write = (jobs: OutboxJob[], at = new Date()) => storage().db.transaction((tx) => storage().db.outbox.insert(jobs, at, tx));

  it('a row commits with its transaction, or not at all; it is found as written', async () => {
    const { db } = storage();
    const kept = { ...job(), entityId: 7 };
    await write([kept]);
    expect(await db.outbox.find(kept.id)).toEqual({ ...kept, status: 'pending', attempts: 0 });
    const lost = job();
    await expect(db.transaction(async (tx) => {
      await db.outbox.insert([lost], new Date(), tx);
      throw new Error('rolled back');
    })).rejects.toThrow('rolled back');
    expect(await db.outbox.find(lost.id)).toBeUndefined();
  });

  it('of 20 concurrent completions of one row, one wins; a finished row keeps the payload it was given', async () => {
    const { db, on } = storage();
    const row = job();
    await write([row]);
    const won = await Promise.all(Array.from({ length: 20 }, (_, i) => on(i).outbox.completeAlone(row.id, new Date(), { type: 'user.updated' })));
    expect(won.filter(Boolean)).toHaveLength(1);
    expect(await db.outbox.find(row.id)).toEqual(expect.objectContaining({ status: 'done', payload: { type: 'user.updated' } }));
  });

  it('failures count; the last one fails the row for good; the relay finds pending rows older than its grace; the sweep deletes old finished rows', async () => {
    const { db } = storage();
    const old = new Date(Date.now() - 3_600_000);
    const [retried, failed, straggler] = [job('versions'), job(), job()];
    await write([retried, failed], old);
    await write([straggler], old);
    await db.outbox.recordFailureAlone(retried.id, 'SMTP said no', false, new Date());
    await db.outbox.recordFailureAlone(failed.id, 'SMTP said no', true, new Date());
    expect(await db.outbox.find(retried.id)).toMatchObject({ status: 'pending', attempts: 1 });
    expect(await db.outbox.find(failed.id)).toMatchObject({ status: 'failed', attempts: 1 });
    const stragglers = (await db.outbox.stragglers(new Date(Date.now() - 60_000), 1000)).map((j) => j.id);
    expect(stragglers).toEqual(expect.arrayContaining([retried.id, straggler.id]));
    expect(stragglers).not.toContain(failed.id);
    expect((await db.outbox.backlog()).find((b) => b.queue === 'versions')).toMatchObject({ pending: 1 });
    await db.outbox.completeAlone(straggler.id, old);
    expect(await db.outbox.purgeDoneAlone(new Date(Date.now() - 60_000), 1000)).toBeGreaterThanOrEqual(1);
    expect(await db.outbox.find(straggler.id)).toBeUndefined();
  });
});
