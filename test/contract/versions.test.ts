import { randomUUID } from 'node:crypto';
import type { SnapshotPayload } from '../../src/domain/storage/versions';
import type { UserRecord } from '../../src/domain/storage/records';
import { forEveryEngine } from '../helpers/contract';

// The versions store's contract (VersionStore): a lookup answers from recorded and pending
// snapshots alike; draining records each pending row once (concurrent drains never record one
// twice); a deleted record is still found by its uuid; pruning keeps the newest before the cutoff.

forEveryEngine('versions store', (storage) => {
  let user: UserRecord;
  beforeAll(async () => {
    const { db, appId } = storage();
    user = await db.transaction((tx) => db.records.insert({
      applicationId: appId, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null,
      passwordHash: null, emailVerified: null, attributes: {},
    }, new Date(), tx));
  });
  /** A snapshot row as the history subscriber writes it, committed. */
  const pending = async (version: number, at: Date, snapshot: Record<string, unknown> | null = { version }) => {
    const { db, appId } = storage();
    const payload: SnapshotPayload = { entityId: user.id, uuid: user.uuid, version, validFrom: at.toISOString(), snapshot };
    const id = randomUUID();
    await db.transaction((tx) => db.outbox.insert([{ id, applicationId: appId, queue: 'versions', name: snapshot ? 'snapshot' : 'tombstone', payload: { ...payload }, entityId: user.id }], at, tx));
    return id;
  };

  it('a lookup answers from a pending snapshot, and the same after it is recorded; concurrent drains record each row once', async () => {
    const { db, on, appId } = storage();
    const t0 = new Date(Date.now() - 10_000);
    const ids = [await pending(2, t0), await pending(3, new Date(t0.getTime() + 1000))];
    expect((await db.versions.at(appId, user.id, new Date(t0.getTime() + 500)))?.snapshot).toEqual({ version: 2 });
    const drained = await Promise.all(Array.from({ length: 10 }, (_, i) => on(i).versions.drainAlone(i === 0 ? ids[0] : undefined, 500, new Date())));
    expect(drained.reduce((n, d) => n + d.recorded, 0)).toBe(2);
    for (const id of ids) expect((await db.outbox.find(id))?.status).toBe('done');
    expect((await db.versions.at(appId, user.id, new Date(t0.getTime() + 500)))?.snapshot).toEqual({ version: 2 });
    expect((await db.versions.at(appId, user.id, new Date()))?.snapshot).toEqual({ version: 3 });
    expect(await db.versions.at(appId, user.id, new Date(t0.getTime() - 1))).toBeUndefined();
    expect(await db.versions.recordOneAlone(ids[0], new Date())).toBe(false);
  });

  it('a drain waits for its own row held by another transaction that leaves it pending, and records it', async () => {
    const { db } = storage();
    const id = await pending(1, new Date(Date.now() - 20_000));
    // another transaction locks the row without changing it (on MariaDB, a statement of another queue
    // that scanned it); on SQLite, any write transaction holds the whole file
    let release!: () => void;
    let held!: () => void;
    const holding = new Promise<void>((r) => { held = r; });
    const hold = async () => {
      held();
      await new Promise<void>((r) => { release = r; });
    };
    const holder = db.sequelize.getDialect() === 'sqlite' ? db.transaction(hold) : db.sequelize.transaction(async (transaction) => {
      await db.sequelize.query('SELECT id FROM outbox WHERE id = ? FOR UPDATE', { replacements: [id], transaction });
      await hold();
    });
    await holding;
    const drained = db.versions.drainAlone(id, 500, new Date());
    await new Promise((r) => setTimeout(r, 300));
    release();
    await holder;
    expect(await drained).toEqual({ own: true, recorded: 1 });
    expect((await db.outbox.find(id))?.status).toBe('done');
  });

  it('a tombstone ends the history and still names the record by its uuid; pruning keeps the newest before the cutoff', async () => {
    const { db, appId } = storage();
    const gone = new Date(Date.now() - 5_000);
    const id = await pending(4, gone, null);
    expect(await db.versions.deletedEntityId(appId, user.uuid)).toBe(user.id);
    expect(await db.versions.recordOneAlone(id, new Date())).toBe(true);
    expect(await db.versions.deletedEntityId(appId, user.uuid)).toBe(user.id);
    expect((await db.versions.at(appId, user.id, new Date()))?.snapshot).toBeNull();
    expect(await db.versions.pruneAlone(new Date(), 1000)).toBeGreaterThanOrEqual(2);
    expect(await db.versions.at(appId, user.id, new Date(gone.getTime() - 1))).toBeUndefined();
  });
});
