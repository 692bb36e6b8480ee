// The records store's contract (RecordStore, with the outbox rows a change commits): versions in
// commit order under 20 concurrent locked updates, a stale write refused, a sign-in's write all or
// nothing (one winner among 20), unique and reserved addresses. Run on every engine.

import { updated } from '../../src/domain/storage/records';
import { reservationHash } from '../../src/domain/email-change';
import type { OutboxJob } from '../../src/domain/storage/outbox';
import { outboxRowsOf } from '../helpers/contract';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Storage } from '../../src/domain/storage';
import type { CredentialKind, NewCredential } from '../../src/domain/storage/credentials';
import type { UserRecord } from '../../src/domain/storage/records';
import { forEveryEngine } from '../helpers/contract';
import { FilterUseError, parseFilter } from '../../src/domain/filter';

forEveryEngine('records store', (storage) => {
  const RACE = 20;
  const hash = () => randomBytes(32).toString('hex');
  const later = (now: Date, seconds: number) => new Date(now.getTime() + seconds * 1000);
  /** Storage by its contract: what every engine's implementation must do. */
  let db: Storage;
  let on: (i: number) => Storage;
  let appId: number;
  /** A client's row id. */
  let one: number;
  let user: UserRecord;
  const credential = (kind: CredentialKind, fields: Partial<NewCredential> = {}): NewCredential => ({
    applicationId: appId, kind, valueHash: hash(), entityId: user.id, clientId: one, forClientId: null, redirectUri: null,
    extra: null, family: null, expiresAt: later(new Date(), 600), ...fields,
  });
  const newUser = () => db.transaction((tx) => db.records.insert({
    applicationId: appId, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null,
    passwordHash: null, emailVerified: null, attributes: {},
  }, new Date(), tx));
  beforeAll(async () => {
    ({ db, on, appId } = storage());
    const client = (clientId: string) => db.transaction((tx) => db.clients.insert({
      applicationId: appId, clientId, secretSealed: 'sealed', description: '', features: [], settings: {},
    }, new Date(), tx));
    one = (await client('one')).id;
    user = await newUser();
  });
  const snapshotJob = (record: UserRecord): OutboxJob => ({
    id: randomUUID(), applicationId: appId, queue: 'versions', name: 'snapshot', entityId: record.id,
    payload: { entityId: record.id, uuid: record.uuid, version: record.version, validFrom: new Date().toISOString(), snapshot: {} },
  });
  const outboxRows = (entityId: number) => outboxRowsOf(storage().db, entityId);

  describe('records, versions and the outbox', () => {
    it(`${RACE} concurrent locked updates of one record give versions 2..${RACE + 1}, each committed with its outbox row`, async () => {
      const record = await newUser();
      await Promise.all(Array.from({ length: RACE }, (_, i) => on(i).transaction(async (tx) => {
        const locked = (await on(i).records.findForUpdate(appId, record.id, tx))!;
        const changed = await on(i).records.update(locked, { attributes: { [`a${i}`]: i } }, new Date(), tx);
        await on(i).outbox.insert([snapshotJob(changed)], new Date(), tx);
      })));
      const final = (await db.records.find(appId, { id: record.id }))!;
      expect(final.version).toBe(RACE + 1);
      expect(Object.keys(final.attributes)).toHaveLength(RACE);
      const versions = (await outboxRows(record.id)).map((r) => (JSON.parse(r.payload) as { version: number }).version).sort((a, b) => a - b);
      expect(versions).toEqual(Array.from({ length: RACE }, (_, i) => i + 2));
    });

    it('a write from a stale read is refused, never lost over a newer version', async () => {
      const record = await newUser();
      await db.transaction(async (tx) => db.records.update((await db.records.findForUpdate(appId, record.id, tx))!, { attributes: { a: 1 } }, new Date(), tx));
      await expect(db.transaction((tx) => db.records.update(record, { attributes: { b: 2 } }, new Date(), tx))).rejects.toThrow(/changed/);
      expect((await db.records.find(appId, { id: record.id }))!.attributes).toEqual({ a: 1 });
    });

    it(`a sign-in's write commits the record, its credentials and its outbox rows (any number) together; of ${RACE} from one read, one`, async () => {
      const record = await newUser();
      const attempts = Array.from({ length: RACE }, () => {
        const now = new Date();
        const next = updated(record, { attributes: { lastLogin: now.toISOString() } }, now);
        const jobs = [snapshotJob(next), { ...snapshotJob(next), id: randomUUID(), queue: 'webhooks' as const, name: 'fan-out', payload: { type: 'user.updated', uuid: `row ${randomUUID()}` } }];
        return { next, now, jobs, rows: [credential('access_token', { entityId: record.id }), credential('refresh_token', { entityId: record.id, family: randomUUID() })] };
      });
      const won = await Promise.all(attempts.map((a, i) => on(i).records.signInAlone(record, a.next, a.rows, a.jobs, [], a.now)));
      expect(won.filter(Boolean)).toHaveLength(1);
      const winner = attempts[won.indexOf(true)];
      const after = (await db.records.find(appId, { id: record.id }))!;
      expect(after).toMatchObject({ version: 2, attributes: winner.next.attributes });
      for (const [i, a] of attempts.entries()) {
        const found = await Promise.all(a.rows.map((r) => db.credentials.findActive(appId, r.kind, r.valueHash, new Date())));
        expect(found.map(Boolean)).toEqual(won[i] ? [true, true] : [false, false]);
      }
      const written = (await outboxRows(record.id)).map((r) => ({ ...r, payload: JSON.parse(r.payload) as unknown }));
      expect(written).toHaveLength(2);
      expect(written).toEqual(expect.arrayContaining(winner.jobs.map((j) => ({ status: 'pending', payload: j.payload }))));
    });


    it('an address reserved for another record is taken: by an insert and by a change, in any case, until the reservation ends', async () => {
      const holder = await newUser();
      const other = await newUser();
      const address = `reserved-${randomUUID()}@example.com`;
      const now = new Date();
      await db.transaction((tx) => db.credentials.reserve(appId, 'email_reservation', reservationHash(appId, address), holder.id, later(now, 60), now, tx));
      const insert = (email: string, at: Date) => db.transaction((tx) => db.records.insert({
        applicationId: appId, typeName: 'user', uuid: randomUUID(), email, username: null, passwordHash: null, emailVerified: null, attributes: {},
      }, at, tx));
      await expect(insert(address.toUpperCase(), now)).rejects.toMatchObject({ attribute: 'email' });
      const change = (id: number, email: string) => db.transaction(async (tx) => {
        const locked = (await db.records.findForUpdate(appId, id, tx))!;
        return db.records.update(locked, { email }, now, tx);
      });
      await expect(change(other.id, address)).rejects.toMatchObject({ attribute: 'email' });
      // the record it is reserved for takes it back
      expect((await change(holder.id, address)).email).toBe(address);
      // reserved again (the earlier row replaced), then ended: free for anyone
      await db.transaction((tx) => db.credentials.reserve(appId, 'email_reservation', reservationHash(appId, 'free-' + address), holder.id, later(now, 60), now, tx));
      expect((await insert('free-' + address, later(now, 61))).email).toBe('free-' + address);
    });


    it('a duplicate email is refused as such, in any case and composition', async () => {
      const record = await newUser();
      await expect(db.transaction((tx) => db.records.insert({
        applicationId: appId, typeName: 'user', uuid: randomUUID(), email: record.email!.toUpperCase(), username: null,
        passwordHash: null, emailVerified: null, attributes: {},
      }, new Date(), tx))).rejects.toMatchObject({ attribute: 'email' });
    });

    it('a search is checked before it runs: a filter or a sort it cannot use is FilterUseError, and the search refuses it alike', async () => {
      expect(() => db.records.checkSearch({ filter: parseFilter('password is null') })).toThrow(FilterUseError);
      expect(() => db.records.checkSearch({ filter: parseFilter("created > 'yesterday'") })).toThrow(FilterUseError);
      expect(() => db.records.checkSearch({ sortOn: ['password'] })).toThrow(expect.objectContaining({ part: 'sort' }));
      expect(() => db.records.checkSearch({ filter: parseFilter("email = 'a@example.com' and displayName != 'x'") })).not.toThrow();
      expect(() => db.records.checkSearch({ sortOn: ['-created', 'displayName'] })).not.toThrow();
      await expect(db.records.searchPage(appId, parseFilter('password is null'), [], { limit: 1, offset: 0 }, 5_000)).rejects.toThrow(FilterUseError);
    });
  });
});
