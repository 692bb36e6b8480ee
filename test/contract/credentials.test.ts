// The credentials store's contract (CredentialStore): single use under concurrency for every kind
// of one-time credential, ownership, refresh rotation (one winner among 20, the session's facts
// passed on), family revocation beside rotations, a disabled user's credentials. Run on every
// engine (test/helpers/contract.ts); a new engine passes this before anything else.

import { randomBytes, randomUUID } from 'node:crypto';
import type { Storage } from '../../src/domain/storage';
import type { CredentialKind, NewCredential } from '../../src/domain/storage/credentials';
import type { UserRecord } from '../../src/domain/storage/records';
import { forEveryEngine } from '../helpers/contract';

forEveryEngine('credentials store', (storage) => {
  const RACE = 20;
  const hash = () => randomBytes(32).toString('hex');
  const later = (now: Date, seconds: number) => new Date(now.getTime() + seconds * 1000);
  /** Storage by its contract: what every engine's implementation must do. */
  let db: Storage;
  let on: (i: number) => Storage;
  let appId: number;
  /** Two clients' row ids. */
  let one: number;
  let two: number;
  let user: UserRecord;
  const credential = (kind: CredentialKind, fields: Partial<NewCredential> = {}): NewCredential => ({
    applicationId: appId, kind, valueHash: hash(), entityId: user.id, clientId: one, forClientId: null, redirectUri: null,
    extra: null, family: null, expiresAt: later(new Date(), 600), ...fields,
  });
  /** A rotation's event (the event store's contract checks what becomes of it). */
  const refreshed = () => ({ type: 'token.refreshed' as const, version: 1 as const, eventId: randomUUID(), applicationId: appId, occurredAt: new Date(), origin: {}, data: {}, clientId: 'contract' });
  const stored = async (...rows: NewCredential[]) => {
    await db.transaction((tx) => db.credentials.insert(rows, new Date(), tx));
    return rows;
  };
  /** Spends a credential now, in a transaction of its own. */
  const spend = (applicationId: number, kind: CredentialKind, valueHash: string) =>
    db.transaction((tx) => db.credentials.consume(applicationId, kind, valueHash, new Date(), tx));
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
    two = (await client('two')).id;
    user = await newUser();
  });

  describe('a credential saved by one statement (save, saveAlone)', () => {
    it(`inserts it, then gives it its new extra when saved again; of ${RACE} saves of one hash on any node, one row; spent without a transaction once`, async () => {
      const row = credential('oidc_refresh_token', { extra: { n: 0 }, family: 'grant-save' });
      await db.credentials.saveAlone(row, new Date());
      expect(await db.credentials.find(appId, 'oidc_refresh_token', row.valueHash)).toMatchObject({ extra: { n: 0 }, family: 'grant-save', usedAt: null });
      await Promise.all(Array.from({ length: RACE }, (_, i) => i % 2 === 0 ? on(i).credentials.saveAlone({ ...row, extra: { n: i + 1 } }, new Date())
        : on(i).transaction((tx) => on(i).credentials.save({ ...row, extra: { n: i + 1 } }, new Date(), tx))));
      const saved = await db.credentials.find(appId, 'oidc_refresh_token', row.valueHash);
      expect((saved!.extra as { n: number }).n).toBeGreaterThanOrEqual(1);
      const spends = await Promise.all(Array.from({ length: RACE }, (_, i) => on(i).credentials.consumeAlone(appId, 'oidc_refresh_token', row.valueHash, new Date(Date.now() + i))));
      expect(spends.filter(Boolean)).toHaveLength(1);
    });
  });

  describe('single use', () => {
    it(`a row inserted spent (insertSpentAlone, a solved challenge's): of ${RACE} inserts of one hash on any node, one is the first; the row is spent`, async () => {
      const row = credential('pow_challenge', { entityId: null });
      const firsts = await Promise.all(Array.from({ length: RACE }, (_, i) => on(i).credentials.insertSpentAlone(row, new Date())));
      expect(firsts.filter(Boolean)).toHaveLength(1);
      const found = await db.credentials.find(appId, 'pow_challenge', row.valueHash);
      expect(found?.usedAt).toBeInstanceOf(Date);
      expect(await db.credentials.findActive(appId, 'pow_challenge', row.valueHash, new Date())).toBeUndefined();
      expect(await db.credentials.insertSpentAlone(row, new Date())).toBe(false);
    });

    it.each(['authorization_code', 'verification_code', 'creation_token', 'social_token', 'refresh_secret'] as const)(
      `%s: exactly one of ${RACE} concurrent spends wins, each in a transaction of its own`,
      async (kind) => {
        const [inTx, bare] = await stored(credential(kind), credential(kind));
        // each at its own millisecond: a spend that wrote the same time again would change no row and hide a double spend
        const at = (i: number) => new Date(Date.now() + i);
        const spends = await Promise.all([
          ...Array.from({ length: RACE / 2 }, (_, i) => on(i).transaction((tx) => on(i).credentials.consume(appId, kind, inTx.valueHash, at(i), tx))),
          ...Array.from({ length: RACE / 2 }, (_, i) => on(i + 1).transaction((tx) => on(i + 1).credentials.consume(appId, kind, bare.valueHash, at(i), tx))),
        ]);
        expect(spends.slice(0, RACE / 2).filter(Boolean)).toHaveLength(1);
        expect(spends.slice(RACE / 2).filter(Boolean)).toHaveLength(1);
        expect((await db.credentials.find(appId, kind, inTx.valueHash))?.usedAt).toBeInstanceOf(Date);
      },
    );

    it('an expired credential is never spent, nor found active', async () => {
      const [expired] = await stored(credential('authorization_code', { expiresAt: later(new Date(), -1) }));
      expect(await spend(appId, 'authorization_code', expired.valueHash)).toBe(false);
      expect(await db.credentials.findActive(appId, 'authorization_code', expired.valueHash, new Date())).toBeUndefined();
    });

    it('a credential of another application is never found nor spent', async () => {
      const [mine] = await stored(credential('verification_code'));
      expect(await db.credentials.find(appId + 1000, 'verification_code', mine.valueHash)).toBeUndefined();
      expect(await spend(appId + 1000, 'verification_code', mine.valueHash)).toBe(false);
      expect(await spend(appId, 'verification_code', mine.valueHash)).toBe(true);
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
      const spend = (c: NewCredential, owner: number | null | undefined) => db.transaction((tx) => db.credentials.consume(appId, 'creation_token', c.valueHash, now, tx, owner));
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
      expect(await db.credentials.rotateAlone(appId, ownByOne.valueHash, two, successors(), now, refreshed())).toBe(false);
      expect(await db.credentials.rotateAlone(appId, ownByOne.valueHash, one, successors(), now, refreshed())).toBe(true);
      expect(await db.credentials.rotateAlone(appId, forTwo.valueHash, one, successors(), now, refreshed())).toBe(false);
      expect(await db.credentials.rotateAlone(appId, forTwo.valueHash, two, successors(), now, refreshed())).toBe(true);
    });
  });

  describe('refresh-token rotation', () => {
    it(`exactly one of ${RACE} concurrent rotations of one token wins; only its successors exist, in the token's record and family`, async () => {
      const [spent] = await stored(credential('refresh_token', { family: 'rotated-family' }));
      const now = new Date();
      const attempts = Array.from({ length: RACE }, () => ({
        access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) },
      }));
      const won = await Promise.all(attempts.map((s, i) => on(i).credentials.rotateAlone(appId, spent.valueHash, one, s, new Date(now.getTime() + i), refreshed())));
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
      expect(await db.credentials.rotateAlone(appId, spent.valueHash, one, attempts[0], now, refreshed())).toBe(false);
    });

    it("the successors carry the spent token's extra (the session's facts), on the single call as on the transaction", async () => {
      const session = { amr: ['pwd'], auth_time: '2026-11-25T10:00:00.000Z' };
      const [spent] = await stored(credential('refresh_token', { family: 'facts-family', extra: { session } }));
      const now = new Date();
      const next = { access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) } };
      expect(await db.credentials.rotateAlone(appId, spent.valueHash, one, next, now, refreshed())).toBe(true);
      for (const [kind, c] of [['access_token', next.access], ['refresh_token', next.refresh]] as const) {
        expect((await db.credentials.findActive(appId, kind, c.valueHash, now))?.extra).toEqual({ session });
      }
      // and a token without extra gives successors without it
      const [bare] = await stored(credential('refresh_token', { family: 'bare-family' }));
      const after = { access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) } };
      expect(await db.credentials.rotateAlone(appId, bare.valueHash, one, after, now, refreshed())).toBe(true);
      expect((await db.credentials.findActive(appId, 'refresh_token', after.refresh.valueHash, now))?.extra).toBeNull();
    });

    it('an expired refresh token is not rotated', async () => {
      const [expired] = await stored(credential('refresh_token', { expiresAt: later(new Date(), -1) }));
      const now = new Date();
      expect(await db.credentials.rotateAlone(appId, expired.valueHash, one, {
        access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) },
      }, now, refreshed())).toBe(false);
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
        on(i).credentials.rotateAlone(appId, t.valueHash, one, { access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) } }, now, refreshed()),
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
      expect(await db.transaction((tx) => db.credentials.revokeForRecord(appId, record.id, ['access_token', 'refresh_token'], 'mine', new Date(), tx))).toBe(2);
      const after = await Promise.all(rows.map((r) => db.credentials.find(appId, r.kind, r.valueHash)));
      expect(after.map((c) => c?.usedAt === null)).toEqual([true, false, false]);
    });
  });

  describe("a disabled user and a record's credentials", () => {
      it("a disabled user's credentials are never found active, and its refresh token does not rotate", async () => {
        const record = await newUser();
        const now = new Date();
        const [token, code, refresh] = await stored(
          credential('access_token', { entityId: record.id }),
          credential('authorization_code', { entityId: record.id }),
          credential('refresh_token', { entityId: record.id, family: 'f-disabled' }),
        );
        for (const c of [token, code, refresh]) expect(await db.credentials.findActive(appId, c.kind, c.valueHash, now)).toBeDefined();
        await db.transaction((tx) => db.records.setDisabled(appId, record.id, { at: now, until: null, reason: null }, tx));
        for (const c of [token, code, refresh]) expect(await db.credentials.findActive(appId, c.kind, c.valueHash, now)).toBeUndefined();
        const successors = { access: { valueHash: hash(), expiresAt: later(now, 60) }, refresh: { valueHash: hash(), expiresAt: later(now, 600) } };
        expect(await db.credentials.rotateAlone(appId, refresh.valueHash, one, successors, now, refreshed())).toBe(false);
        await db.transaction((tx) => db.records.setDisabled(appId, record.id, null, tx));
        expect(await db.credentials.rotateAlone(appId, refresh.valueHash, one, successors, now, refreshed())).toBe(true);
      });

      it('a disable with an until is over at that time: its credentials work again and its refresh token rotates (the procedure too); what was issued during it does not', async () => {
        const record = await newUser();
        const now = new Date();
        const at = later(now, 1);
        const until = later(now, 60);
        // issued before the disable, and by a sign-in in flight while it lasted
        const [token, refresh] = await stored(
          credential('access_token', { entityId: record.id, expiresAt: later(now, 3600) }),
          credential('refresh_token', { entityId: record.id, family: 'f-until', expiresAt: later(now, 3600) }),
        );
        const [during] = [credential('access_token', { entityId: record.id, expiresAt: later(now, 3600) })];
        await db.transaction((tx) => db.credentials.insert([during], later(now, 2), tx));
        await db.transaction((tx) => db.records.setDisabled(appId, record.id, { at, until, reason: 'a week off' }, tx));
        expect((await db.records.find(appId, { id: record.id }))!.disabled).toEqual({ at, until, reason: 'a week off' });
        const before = new Date(until.getTime() - 1);
        expect(await db.credentials.findActive(appId, token.kind, token.valueHash, before)).toBeUndefined();
        const successors = { access: { valueHash: hash(), expiresAt: later(now, 600) }, refresh: { valueHash: hash(), expiresAt: later(now, 1200) } };
        expect(await db.credentials.rotateAlone(appId, refresh.valueHash, one, successors, before, refreshed())).toBe(false);
        // at the until itself the disable is over for what was issued before it; what was issued during it stays refused
        expect(await db.credentials.findActive(appId, token.kind, token.valueHash, until)).toBeDefined();
        expect(await db.credentials.findActive(appId, during.kind, during.valueHash, until)).toBeUndefined();
        expect(await db.credentials.rotateAlone(appId, refresh.valueHash, one, successors, until, refreshed())).toBe(true);
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
  });

  describe('the sweep', () => {
    it('deletes what expired and what was spent before the cutoff, in bounded batches, never a live credential; each half by its own index', async () => {
      const now = new Date();
      const cutoff = later(now, -3600);
      const [expired, spent, live, spentLately] = await stored(
        credential('access_token', { expiresAt: later(now, -7200) }),
        credential('authorization_code', { expiresAt: later(now, 3600) }),
        credential('access_token', { expiresAt: later(now, 3600) }),
        credential('authorization_code', { expiresAt: later(now, 3600) }),
      );
      expect(await db.transaction((tx) => db.credentials.consume(appId, spent.kind, spent.valueHash, later(now, -7200), tx))).toBe(true);
      expect(await db.transaction((tx) => db.credentials.consume(appId, spentLately.kind, spentLately.valueHash, now, tx))).toBe(true);
      // one row a batch: the expired one and the spent one take a batch each
      // the statements the sweep sends, as MariaDB would run them
      const { db: database } = storage();
      const sent: string[] = [];
      // (Sequelize reads its logging option at each query; its typings do not show the options)
      const options = (database.sequelize as unknown as { options: { logging: unknown } }).options;
      const logging = options.logging;
      options.logging = (statement: string) => void sent.push(statement.replace(/^Executing \([^)]*\): /, ''));
      let removed = 0;
      try {
        for (let n = await db.credentials.sweepAlone(cutoff, 1); n > 0; n = await db.credentials.sweepAlone(cutoff, 1)) {
          expect(n).toBe(1);
          removed += n;
        }
      } finally {
        options.logging = logging;
      }
      expect(removed).toBeGreaterThanOrEqual(2);
      const left = await Promise.all([expired, spent, live, spentLately].map((c) => db.credentials.find(appId, c.kind, c.valueHash)));
      expect(left.map((c) => c !== undefined && c !== null)).toEqual([false, false, true, true]);
      if (database.sequelize.getDialect() !== 'mysql') return;
      const selects = [...new Set(sent.filter((q) => /^SELECT/.test(q)))];
      expect(selects.length).toBeGreaterThanOrEqual(2);
      const keys = new Set<string | null>();
      for (const select of selects) {
        const [plan] = await database.sequelize.query(`EXPLAIN ${select}`) as [{ key: string | null }[], unknown];
        for (const p of plan) keys.add(p.key);
      }
      // each half through its index, never a scan of the table
      expect([...keys].sort()).toEqual(['credentials_expires', 'credentials_used']);
    });
  });
});
