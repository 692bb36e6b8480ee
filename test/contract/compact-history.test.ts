import { randomUUID } from 'node:crypto';
import type { SnapshotPayload, Snapshot } from '../../src/domain/storage/versions';
import type { UserRecord } from '../../src/domain/storage/records';
import { formatTimestamp } from '../../src/domain/timestamps';
import { RUN_LIMIT } from '../../src/domain/sign-in-runs';
import { forEveryEngine, type ContractStorage } from '../helpers/contract';

// Compact history (docs/versions.md#compact-history): a sign-in after a record's newest version is
// kept in that version's run rather than as a snapshot of its own; every lookup and every history
// answers exactly what one row per version answered; history kept one row per sign-in converts
// into runs online, in bounded batches, while workers record.

type Doc = Record<string, unknown>;
const ts = formatTimestamp;

/** A record's versions as the service writes them: created, signed in (lastLogin and lastUpdated), edited. */
function story(user: UserRecord, start: Date) {
  const versions: { version: number; at: Date; snapshot: Doc | null }[] = [];
  let state: Doc = { id: user.id, uuid: user.uuid, created: ts(start), lastUpdated: ts(start), email: user.email, displayName: null, profiles: [] };
  let now = start.getTime();
  const push = (at: Date, snapshot: Doc | null) => versions.push({ version: versions.length + 1, at, snapshot });
  push(start, state);
  return {
    versions,
    signIn(after = 1000) {
      now += after;
      const at = new Date(now);
      // the first sign-in adds lastLogin (before profiles, as the record's attributes are): stored whole
      state = 'lastLogin' in state ? { ...state, lastUpdated: ts(at), lastLogin: ts(at) }
        : Object.fromEntries([...Object.entries(state).filter(([k]) => k !== 'profiles'), ['lastLogin', ts(at)], ['profiles', state.profiles]].map(([k, v]) => [k, k === 'lastUpdated' ? ts(at) : v]));
      push(at, state);
    },
    edit(change: Doc, after = 1000) {
      now += after;
      const at = new Date(now);
      state = { ...state, ...change, lastUpdated: ts(at) };
      push(at, state);
    },
    remove(after = 1000) {
      now += after;
      push(new Date(now), null);
    },
  };
}

forEveryEngine('compact history', (storage) => {
  const newUser = async (): Promise<UserRecord> => {
    const { db, appId } = storage();
    return db.transaction((tx) => db.records.insert({
      applicationId: appId, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null,
      passwordHash: null, emailVerified: null, attributes: {},
    }, new Date(), tx));
  };
  /** Snapshot rows as the history subscriber writes them, committed; their outbox ids. */
  const pending = async (user: UserRecord, versions: { version: number; at: Date; snapshot: Doc | null }[], s: ContractStorage = storage()) => {
    const rows = versions.map((v) => {
      const payload: SnapshotPayload = { entityId: user.id, uuid: user.uuid, version: v.version, validFrom: v.at.toISOString(), snapshot: v.snapshot };
      return { id: randomUUID(), applicationId: s.appId, queue: 'versions' as const, name: v.snapshot ? 'snapshot' : 'tombstone', payload: { ...payload }, entityId: user.id };
    });
    // each written when its change committed (the worker records the oldest first)
    for (let i = 0; i < rows.length; i += 200) {
      await s.db.transaction(async (tx) => {
        for (let n = i; n < Math.min(rows.length, i + 200); n++) await s.db.outbox.insert([rows[n]], versions[n].at, tx);
      });
    }
    return rows.map((r) => r.id);
  };
  const drainAll = async (db = storage().db, limit = 500) => {
    for (;;) {
      const { recorded } = await db.versions.drainAlone(undefined, limit, new Date());
      if (recorded === 0) return;
    }
  };
  const storedRows = async (user: UserRecord) => {
    const [rows] = await storage().db.sequelize.query(`SELECT version, sign_ins FROM entity_versions WHERE entity_id = ${user.id} ORDER BY version`) as [{ version: number; sign_ins: string | null }[], unknown];
    return rows.map((r) => ({ version: Number(r.version), run: r.sign_ins ? r.sign_ins.split(',').length - 1 : 0 }));
  };
  /** The history as the store answers it, with each version's snapshot serialized (attribute order included). */
  const answered = (list: Snapshot[]) => list.map((s) => ({ version: s.version, at: s.validFrom.toISOString(), snapshot: JSON.stringify(s.snapshot) }));
  const expected = (versions: { version: number; at: Date; snapshot: Doc | null }[]) =>
    versions.map((v) => ({ version: v.version, at: v.at.toISOString(), snapshot: JSON.stringify(v.snapshot) }));
  /** Every version answers `at` its own time and 1 ms before the next one. */
  const lookupsMatch = async (user: UserRecord, versions: { version: number; at: Date; snapshot: Doc | null }[]) => {
    const { db, appId } = storage();
    for (const [i, v] of versions.entries()) {
      const end = i + 1 < versions.length ? new Date(versions[i + 1].at.getTime() - 1) : new Date(v.at.getTime() + 86_400_000);
      for (const when of [v.at, end]) {
        if (versions[i + 1] && versions[i + 1].at.getTime() === v.at.getTime()) continue;
        const found = await db.versions.at(appId, user.id, when);
        expect({ version: found?.version, snapshot: JSON.stringify(found?.snapshot ?? null) }).toEqual({ version: v.version, snapshot: JSON.stringify(v.snapshot) });
      }
    }
  };

  /** Versions as the code before compact history kept them (a row per version, each snapshot whole), and the conversion to do again. */
  const legacy = async (user: UserRecord, versions: { version: number; at: Date; snapshot: Doc | null }[]) => {
    const { db, appId } = storage();
    const time = (d: Date) => (db.sequelize.getDialect() === 'sqlite' ? d.toISOString().replace('T', ' ').replace('Z', ' +00:00') : d.toISOString().replace('T', ' ').replace('Z', ''));
    const values = versions.map((v) => [appId, user.id, time(v.at), v.version, v.snapshot ? 0 : 1, null, JSON.stringify(v.snapshot)]);
    await db.sequelize.query(`INSERT INTO entity_versions (application_id, entity_id, valid_from, version, deleted, entity_uuid, snapshot) VALUES ${values.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
      { replacements: values.flat() });
    await db.sequelize.query("UPDATE upkeep_marks SET position = 0 WHERE name IN ('history', 'history-run')");
  };

  it('a run of sign-ins is kept in the row of the version before it; an edit and the first sign-in are stored whole; every version answers as before', async () => {
    const { db, appId } = storage();
    const user = await newUser();
    const s = story(user, new Date(Date.now() - 3_600_000));
    s.signIn();
    for (let i = 0; i < 5; i++) s.signIn();
    s.edit({ displayName: 'Ada' });
    s.signIn(0); // in the same millisecond
    s.signIn();
    await pending(user, s.versions);
    await drainAll();
    expect(await storedRows(user)).toEqual([{ version: 1, run: 0 }, { version: 2, run: 5 }, { version: 8, run: 2 }]);
    expect(answered(await db.versions.history(appId, user.id))).toEqual(expected(s.versions));
    expect(answered(await db.versions.history(appId, user.id, 3))).toEqual(expected(s.versions.slice(-3)));
    await lookupsMatch(user, s.versions);
  });

  it('versions recorded one job at a time, and out of order, answer the same', async () => {
    const { db, appId } = storage();
    const user = await newUser();
    const s = story(user, new Date(Date.now() - 3_600_000));
    for (let i = 0; i < 8; i++) s.signIn();
    const ids = await pending(user, s.versions);
    // 1, 2, 3 in order; 6 before 4 and 5 (its predecessor not recorded yet: stored whole); then the rest
    for (const n of [0, 1, 2, 5, 3, 4, 8, 7, 6]) expect(await db.versions.recordOneAlone(ids[n], new Date())).toBe(true);
    expect(await db.versions.recordOneAlone(ids[4], new Date())).toBe(false);
    expect(answered(await db.versions.history(appId, user.id))).toEqual(expected(s.versions));
    await lookupsMatch(user, s.versions);
    expect((await storedRows(user)).length).toBeLessThan(s.versions.length);
  });

  it(`a run holds ${RUN_LIMIT} sign-ins; the next starts a row of its own; a tombstone ends the history`, async () => {
    const { db, appId } = storage();
    const user = await newUser();
    const s = story(user, new Date(Date.now() - 86_400_000));
    for (let i = 0; i < RUN_LIMIT + 10; i++) s.signIn();
    s.remove();
    await pending(user, s.versions);
    await drainAll(storage().db, 97);
    expect(await storedRows(user)).toEqual([{ version: 1, run: 0 }, { version: 2, run: RUN_LIMIT }, { version: RUN_LIMIT + 3, run: 8 }, { version: RUN_LIMIT + 12, run: 0 }]);
    expect(answered(await db.versions.history(appId, user.id))).toEqual(expected(s.versions));
    expect(await db.versions.at(appId, user.id, new Date())).toMatchObject({ snapshot: null });
  });

  it('history kept one row per sign-in converts into runs in bounded batches, online, answering the same before, during and after', async () => {
    const { db, appId, on } = storage();
    const users = await Promise.all(Array.from({ length: 4 }, () => newUser()));
    const stories = users.map((u, n) => {
      const s = story(u, new Date(Date.now() - 86_400_000));
      for (let i = 0; i < 6 + n * 5; i++) {
        s.signIn();
        if (i % 4 === 3) s.edit({ displayName: `edit ${i}` });
      }
      return s;
    });
    for (const [n, s] of stories.entries()) await legacy(users[n], s.versions);
    const before = await Promise.all(users.map(async (u) => answered(await db.versions.history(appId, u.id))));
    for (const [n, s] of stories.entries()) expect(before[n]).toEqual(expected(s.versions));

    // meanwhile, the records keep signing in: workers record those while the conversion runs
    const more = stories.map((s) => {
      const from = s.versions.length;
      for (let i = 0; i < 5; i++) s.signIn();
      return s.versions.slice(from);
    });
    for (const [n, list] of more.entries()) await pending(users[n], list);
    let batches = 0;
    let merged = 0;
    const converting = (async () => {
      // 8 rows a batch: the largest record (31 rows) is converted in windows
      for (let n = 0; ; batches++) {
        n = await on(1).versions.compactAlone(8);
        if (n < 0) return;
        merged += n;
      }
    })();
    const recording = Promise.all([0, 2, 3].map(async (i) => {
      for (;;) {
        try {
          const { recorded } = await on(i).versions.drainAlone(undefined, 3, new Date());
          if (recorded === 0) return;
        } catch (e) {
          // another worker (or the conversion) rewrote a run this batch read: the batch rolled back, recorded again
          expect(String(e)).toMatch(/changed meanwhile|deadlock|Deadlock|lock/);
        }
      }
    }));
    await Promise.all([converting, recording]);
    await drainAll();
    expect(batches).toBeGreaterThan(3);
    expect(merged).toBeGreaterThan(20);
    for (const [n, s] of stories.entries()) {
      expect(answered(await db.versions.history(appId, users[n].id))).toEqual(expected(s.versions));
      expect((await storedRows(users[n])).length).toBeLessThan(s.versions.length / 2);
    }
    await lookupsMatch(users[3], stories[3].versions);
    // done: later calls read the mark alone
    expect(await db.versions.compactAlone(8)).toBe(-1);
  });

  it('retention and the conversion at once: every version inside the window still answers, the newest too; windows of 2 rows end', async () => {
    const { db, appId, on } = storage();
    // (enough records that, on Galera, a batch pruned on one node meets a merge committed on another)
    const users = await Promise.all(Array.from({ length: 12 }, () => newUser()));
    const day = 86_400_000;
    const stories = users.map((u) => {
      const s = story(u, new Date(Date.now() - 10 * day));
      for (let i = 0; i < 12; i++) s.signIn(day / 2);
      return s;
    });
    for (const [n, s] of stories.entries()) await legacy(users[n], s.versions);
    const cutoff = new Date(Date.now() - 4 * day);
    let converting = true;
    await Promise.all([
      (async () => {
        while ((await on(1).versions.compactAlone(2)) >= 0);
        converting = false;
      })(),
      (async () => {
        do await on(2).versions.pruneAlone(cutoff, 2); while (converting);
        while ((await on(2).versions.pruneAlone(cutoff, 2)) > 0);
      })(),
    ]);
    for (const [n, s] of stories.entries()) {
      const inWindow = s.versions.filter((v, i) => v.at >= cutoff || (s.versions[i + 1] && s.versions[i + 1].at > cutoff));
      const answered = (await db.versions.history(appId, users[n].id)).map((v) => v.version);
      for (const v of inWindow) expect(answered).toContain(v.version);
      await lookupsMatch(users[n], s.versions.filter((v) => v.at >= cutoff));
      expect((await db.versions.at(appId, users[n].id, new Date()))?.version).toBe(s.versions.length);
    }
  });
});
