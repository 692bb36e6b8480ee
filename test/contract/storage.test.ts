import { randomBytes, randomUUID } from 'node:crypto';
import { loadConfig } from '../../src/config';
import { openDatabase, type Database } from '../../src/db';
import { migrate } from '../../src/db/migrate';
import type { CredentialKind, NewCredential } from '../../src/domain/storage/credentials';
import { updated, type UserRecord } from '../../src/domain/storage/records';
import { reservationHash } from '../../src/domain/email-change';
import type { OutboxJob } from '../../src/domain/storage/outbox';
import { createTestBackend, onMysql, skipUnless, type TestBackend } from '../helpers/backend';

// The storage contract: what every implementation of the database layer guarantees, run against
// each one — SQLite, (when the run has a mysql: DATABASE_URL) MariaDB with the stored procedures
// and MariaDB with plain statements (DATABASE_PROCEDURES=off), and (when GALERA_URLS names the
// nodes of a Galera cluster) every node a writer at once: each race is spread over the nodes, as
// pods on different nodes would run it. The API's tests stand on these guarantees; a new engine
// passes this file before anything else.

const RACE = 20;
const galeraUrls = process.env.GALERA_URLS?.split(',').filter(Boolean) ?? [];
const ENGINES = [
  { name: 'SQLite', mysql: false, procedures: 'off', nodes: [] as string[] },
  { name: 'MariaDB with stored procedures', mysql: true, procedures: 'on', nodes: [] },
  { name: 'MariaDB without stored procedures', mysql: true, procedures: 'off', nodes: [] },
  { name: 'Galera, a writer on every node, with stored procedures', mysql: true, procedures: 'on', nodes: galeraUrls },
  { name: 'Galera, a writer on every node, without stored procedures', mysql: true, procedures: 'off', nodes: galeraUrls },
] as const;

const hash = () => randomBytes(32).toString('hex');
const later = (now: Date, seconds: number) => new Date(now.getTime() + seconds * 1000);

for (const engine of ENGINES) {
  const galera = engine.name.startsWith('Galera');
  const suite = galera ? skipUnless(onMysql && galeraUrls.length > 1, `the storage contract on ${engine.name} needs GALERA_URLS`)
    : engine.mysql ? skipUnless(onMysql, `the storage contract on ${engine.name} needs a mysql: DATABASE_URL`) : describe;
  suite(`storage contract: ${engine.name}`, () => {
    let backend: TestBackend;
    let db: Database;
    /** The database on every node (one on a single server): the `i`th racer writes through node i mod n. */
    let nodes: Database[];
    const on = (i: number) => nodes[i % nodes.length];
    let appId: number;
    /** Two clients' row ids. */
    let one: number;
    let two: number;
    let user: UserRecord;

    const credential = (kind: CredentialKind, fields: Partial<NewCredential> = {}): NewCredential => ({
      applicationId: appId, kind, valueHash: hash(), entityId: user.id, clientId: one, forClientId: null, redirectUri: null,
      extra: null, family: null, expiresAt: later(new Date(), 600), ...fields,
    });
    const stored = async (...rows: NewCredential[]) => {
      await db.credentials.insert(rows, new Date());
      return rows;
    };
    const snapshotJob = (record: UserRecord): OutboxJob => ({
      id: randomUUID(), applicationId: appId, queue: 'versions', name: 'snapshot', payload: { version: record.version }, entityId: record.id,
    });
    const outboxRows = async (entityId: number) => (await db.sequelize.query(
      'SELECT status, payload FROM outbox WHERE entity_id = ? ORDER BY created_at', { replacements: [entityId], type: 'SELECT' },
    )) as { status: string; payload: string }[];
    const newUser = () => db.records.insert({
      applicationId: appId, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null,
      passwordHash: null, emailVerified: null, attributes: {},
    }, new Date());

    beforeAll(async () => {
      backend = await createTestBackend({ env: { DATABASE_PROCEDURES: engine.procedures } });
      const config = loadConfig(backend.env, backend.dir);
      db = openDatabase(config.database);
      expect(db.procedures).toBe(engine.procedures === 'on');
      await migrate(db);
      // the test's database on each node (the one backend created, replicated to every node)
      nodes = engine.nodes.length === 0 ? [db] : engine.nodes.map((node) => {
        const url = new URL(node);
        url.pathname = new URL(backend.env.DATABASE_URL!).pathname;
        return openDatabase(loadConfig({ ...backend.env, DATABASE_URL: url.toString() }, backend.dir).database);
      });
      appId = (await db.transaction((tx) => db.applications.create('contract', new Date(), tx))).id;
      const client = (clientId: string) => db.transaction((tx) => db.clients.insert({
        applicationId: appId, clientId, secretSealed: 'sealed', description: '', features: [], settings: {},
      }, new Date(), tx));
      one = (await client('one')).id;
      two = (await client('two')).id;
      user = await newUser();
    });
    afterAll(async () => {
      for (const node of nodes ?? []) if (node !== db) await node.close();
      await db?.close();
      await backend?.cleanup();
    });

    describe('single use', () => {
      it.each(['authorization_code', 'verification_code', 'creation_token', 'social_token', 'refresh_secret'] as const)(
        `%s: exactly one of ${RACE} concurrent spends wins, in or out of a transaction`,
        async (kind) => {
          const [inTx, bare] = await stored(credential(kind), credential(kind));
          // each at its own millisecond: a spend that wrote the same time again would change no row and hide a double spend
          const at = (i: number) => new Date(Date.now() + i);
          const spends = await Promise.all([
            ...Array.from({ length: RACE / 2 }, (_, i) => on(i).transaction((tx) => on(i).credentials.consume(appId, kind, inTx.valueHash, at(i), tx))),
            ...Array.from({ length: RACE / 2 }, (_, i) => on(i).credentials.consume(appId, kind, bare.valueHash, at(i))),
          ]);
          expect(spends.slice(0, RACE / 2).filter(Boolean)).toHaveLength(1);
          expect(spends.slice(RACE / 2).filter(Boolean)).toHaveLength(1);
          expect((await db.credentials.find(appId, kind, inTx.valueHash))?.usedAt).toBeInstanceOf(Date);
        },
      );

      it('an expired credential is never spent, nor found active', async () => {
        const [expired] = await stored(credential('authorization_code', { expiresAt: later(new Date(), -1) }));
        expect(await db.credentials.consume(appId, 'authorization_code', expired.valueHash, new Date())).toBe(false);
        expect(await db.credentials.findActive(appId, 'authorization_code', expired.valueHash, new Date())).toBeUndefined();
      });

      it('a credential of another application is never found nor spent', async () => {
        const [mine] = await stored(credential('verification_code'));
        expect(await db.credentials.find(appId + 1000, 'verification_code', mine.valueHash)).toBeUndefined();
        expect(await db.credentials.consume(appId + 1000, 'verification_code', mine.valueHash, new Date())).toBe(false);
        expect(await db.credentials.consume(appId, 'verification_code', mine.valueHash, new Date())).toBe(true);
      });
    });

    describe('ownership', () => {
      it('a credential issued for a client is spent only by that client; one a client issued for itself only by it', async () => {
        const now = new Date();
        const [forTwo, ownByOne, forNobody] = await stored(
          credential('creation_token', { clientId: one, forClientId: two }),
          credential('creation_token', { clientId: one }),
          credential('creation_token', { clientId: null }),
        );
        const spend = (c: NewCredential, owner: number | null | undefined) => db.credentials.consume(appId, 'creation_token', c.valueHash, now, undefined, owner);
        expect([await spend(forTwo, one), await spend(forTwo, null), await spend(forTwo, two)]).toEqual([false, false, true]);
        expect([await spend(ownByOne, two), await spend(ownByOne, one)]).toEqual([false, true]);
        // issued for no client in particular (for_client_id NULL, whoever issued it): spent where no client is asked for
        expect([await spend(forNobody, two), await spend(forNobody, null)]).toEqual([false, true]);
        const [anyone] = await stored(credential('creation_token', { clientId: one, forClientId: two }));
        expect(await spend(anyone, undefined)).toBe(true);
      });

      it('a refresh token is rotated only by the client it belongs to', async () => {
        const now = new Date();
        const successors = () => ({ access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) } });
        const [ownByOne, forTwo] = await stored(
          credential('refresh_token', { family: 'f-own' }),
          credential('refresh_token', { forClientId: two, family: 'f-for-two' }),
        );
        expect(await db.credentials.rotate(appId, ownByOne.valueHash, two, successors(), now)).toBe(false);
        expect(await db.credentials.rotate(appId, ownByOne.valueHash, one, successors(), now)).toBe(true);
        expect(await db.credentials.rotate(appId, forTwo.valueHash, one, successors(), now)).toBe(false);
        expect(await db.credentials.rotate(appId, forTwo.valueHash, two, successors(), now)).toBe(true);
      });
    });

    describe('refresh-token rotation', () => {
      it(`exactly one of ${RACE} concurrent rotations of one token wins; only its successors exist, in the token's record and family`, async () => {
        const [spent] = await stored(credential('refresh_token', { family: 'rotated-family' }));
        const now = new Date();
        const attempts = Array.from({ length: RACE }, () => ({
          access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) },
        }));
        const won = await Promise.all(attempts.map((s, i) => on(i).credentials.rotate(appId, spent.valueHash, one, s, new Date(now.getTime() + i))));
        expect(won.filter(Boolean)).toHaveLength(1);
        for (const [i, s] of attempts.entries()) {
          const access = await db.credentials.findActive(appId, 'access_token', s.access.valueHash, now);
          const refresh = await db.credentials.findActive(appId, 'refresh_token', s.refresh.valueHash, now);
          if (!won[i]) {
            expect([access, refresh]).toEqual([undefined, undefined]);
            continue;
          }
          for (const c of [access, refresh]) {
            expect(c).toMatchObject({ entityId: user.id, family: 'rotated-family', clientId: one, forClientId: null, usedAt: null });
          }
          expect(access!.expiresAt.getTime()).toBe(s.access.expiresAt.getTime());
          expect(refresh!.expiresAt.getTime()).toBe(s.refresh.expiresAt.getTime());
        }
        // spent: a second rotation of the same token is refused
        expect(await db.credentials.rotate(appId, spent.valueHash, one, attempts[0], now)).toBe(false);
      });

      it("the successors carry the spent token's extra (the session's facts), on the single call as on the transaction", async () => {
        const session = { amr: ['pwd'], auth_time: '2026-11-25T10:00:00.000Z' };
        const [spent] = await stored(credential('refresh_token', { family: 'facts-family', extra: { session } }));
        const now = new Date();
        const next = { access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) } };
        expect(await db.credentials.rotate(appId, spent.valueHash, one, next, now)).toBe(true);
        for (const [kind, c] of [['access_token', next.access], ['refresh_token', next.refresh]] as const) {
          expect((await db.credentials.findActive(appId, kind, c.valueHash, now))?.extra).toEqual({ session });
        }
        // and a token without extra gives successors without it
        const [bare] = await stored(credential('refresh_token', { family: 'bare-family' }));
        const after = { access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) } };
        expect(await db.credentials.rotate(appId, bare.valueHash, one, after, now)).toBe(true);
        expect((await db.credentials.findActive(appId, 'refresh_token', after.refresh.valueHash, now))?.extra).toBeNull();
      });

      it('an expired refresh token is not rotated', async () => {
        const [expired] = await stored(credential('refresh_token', { expiresAt: later(new Date(), -1) }));
        const now = new Date();
        expect(await db.credentials.rotate(appId, expired.valueHash, one, {
          access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) },
        }, now)).toBe(false);
      });
    });

    describe('family revocation', () => {
      it('spends every live credential of the family and nothing else', async () => {
        const family = `family-${randomUUID()}`;
        const rows = await stored(
          credential('access_token', { family }), credential('refresh_token', { family }), credential('refresh_secret', { family }),
          credential('refresh_token', { family: 'another-family' }),
        );
        const revoked = await db.transaction((tx) => db.credentials.revokeFamily(appId, family, new Date(), tx), { readCommitted: true });
        expect(revoked).toBe(3);
        const after = await Promise.all(rows.map((r) => db.credentials.find(appId, r.kind, r.valueHash)));
        expect(after.map((c) => c?.usedAt !== null)).toEqual([true, true, true, false]);
      });

      it(`${RACE} families revoked while ${RACE} of their tokens rotate: no deadlock escapes, and every presented token ends spent`, async () => {
        const now = new Date();
        const tokens = await stored(...Array.from({ length: RACE }, (_, i) => credential('refresh_token', { family: `race-${i}-${randomUUID()}` })));
        const outcomes = await Promise.allSettled(tokens.flatMap((t, i) => [
          on(i).credentials.rotate(appId, t.valueHash, one, { access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) } }, now),
          on(i + 1).transaction((tx) => on(i + 1).credentials.revokeFamily(appId, t.family!, now, tx), { readCommitted: true }),
        ]));
        expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
        const after = await Promise.all(tokens.map((t) => db.credentials.find(appId, 'refresh_token', t.valueHash)));
        expect(after.filter((c) => c?.usedAt === null)).toEqual([]);
      });

      it("revoking a record's tokens keeps the caller's own session", async () => {
        const record = await newUser();
        const rows = await stored(
          credential('access_token', { entityId: record.id, family: 'mine' }), credential('refresh_token', { entityId: record.id, family: 'theirs' }),
          credential('access_token', { entityId: record.id }),
        );
        expect(await db.credentials.revokeForRecord(appId, record.id, ['access_token', 'refresh_token'], 'mine', new Date())).toBe(2);
        const after = await Promise.all(rows.map((r) => db.credentials.find(appId, r.kind, r.valueHash)));
        expect(after.map((c) => c?.usedAt === null)).toEqual([true, false, false]);
      });
    });

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
          const jobs = [snapshotJob(next), { ...snapshotJob(next), id: randomUUID(), queue: 'mail', name: 'send', payload: { second: `row ${randomUUID()}` } }];
          return { next, now, jobs, rows: [credential('access_token', { entityId: record.id }), credential('refresh_token', { entityId: record.id, family: randomUUID() })] };
        });
        const won = await Promise.all(attempts.map((a, i) => on(i).records.signIn(record, a.next, a.rows, a.jobs, a.now)));
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

      it("a disabled user's credentials are never found active, and its refresh token does not rotate", async () => {
        const record = await newUser();
        const now = new Date();
        const [token, code, refresh] = await stored(
          credential('access_token', { entityId: record.id }),
          credential('authorization_code', { entityId: record.id }),
          credential('refresh_token', { entityId: record.id, family: 'f-disabled' }),
        );
        for (const c of [token, code, refresh]) expect(await db.credentials.findActive(appId, c.kind, c.valueHash, now)).toBeDefined();
        await db.records.setDisabled(appId, record.id, now);
        for (const c of [token, code, refresh]) expect(await db.credentials.findActive(appId, c.kind, c.valueHash, now)).toBeUndefined();
        const successors = { access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) } };
        expect(await db.credentials.rotate(appId, refresh.valueHash, one, successors, now)).toBe(false);
        await db.records.setDisabled(appId, record.id, null);
        expect(await db.credentials.rotate(appId, refresh.valueHash, one, successors, now)).toBe(true);
      });

      it('an address reserved for another record is taken: by an insert and by a change, in any case, until the reservation ends', async () => {
        const holder = await newUser();
        const other = await newUser();
        const address = `reserved-${randomUUID()}@example.com`;
        const now = new Date();
        await db.transaction((tx) => db.credentials.reserve(appId, 'email_reservation', reservationHash(appId, address), holder.id, later(now, 60), now, tx));
        const insert = (email: string, at: Date) => db.records.insert({
          applicationId: appId, typeName: 'user', uuid: randomUUID(), email, username: null, passwordHash: null, emailVerified: null, attributes: {},
        }, at);
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

      it("a record's live credentials of a kind are listed, spent ones not", async () => {
        const record = await newUser();
        const [a, b] = await stored(credential('email_change_undo', { entityId: record.id }), credential('email_change_undo', { entityId: record.id }));
        await db.transaction(async (tx) => {
          expect((await db.credentials.liveOfRecord(appId, record.id, 'email_change_undo', new Date(), tx)).map((c) => c.valueHash).sort()).toEqual([a.valueHash, b.valueHash].sort());
          expect(await db.credentials.consume(appId, 'email_change_undo', a.valueHash, new Date(), tx)).toBe(true);
          expect((await db.credentials.liveOfRecord(appId, record.id, 'email_change_undo', new Date(), tx)).map((c) => c.valueHash)).toEqual([b.valueHash]);
        });
      });

      it('a duplicate email is refused as such, in any case and composition', async () => {
        const record = await newUser();
        await expect(db.records.insert({
          applicationId: appId, typeName: 'user', uuid: randomUUID(), email: record.email!.toUpperCase(), username: null,
          passwordHash: null, emailVerified: null, attributes: {},
        }, new Date())).rejects.toMatchObject({ attribute: 'email' });
      });
    });
  });
}
