// The event store's contract (EventStore): events written in the change's transaction (a change
// rolled back leaves none), ordered per account whichever node wrote them, an account's activity
// newest first and paged by a cursor across events and counted failures, failed sign-ins counted
// once per account, reason and minute under concurrency, the sweep, and the events the two hot
// writes (a sign-in, a rotation) write in their one call. Run on every engine
// (test/helpers/contract.ts), Galera's multi-writer nodes included.

import { randomBytes, randomUUID } from 'node:crypto';
import type { Storage } from '../../src/domain/storage';
import { event, kept, recordSubject, USER_AGENT_MAX, type KeptEvent } from '../../src/domain/events';
import type { UserRecord } from '../../src/domain/storage/records';
import { updated } from '../../src/domain/storage/records';
import { ACTIVITY_TYPES, cursorOf } from '../../src/domain/activity';
import type { ActivityEntry } from '../../src/domain/storage/events';
import { forEveryEngine, newAccount, type ContractStorage } from '../helpers/contract';

forEveryEngine('event store', (storage) => {
  const RACE = 20;
  let db: Storage;
  let on: (i: number) => Storage;
  let appId: number;
  let contract: ContractStorage;
  const hash = () => randomBytes(32).toString('hex');
  const signedIn = (account: number, at: Date, userAgent?: string): KeptEvent => kept(event('account.signed_in', appId, at, {
    actor: { kind: 'account', accountId: account, clientId: 'app-one' }, origin: { address: '192.0.2.7', userAgent, requestId: 'req-1' },
  }, recordSubject(account), { method: 'password', factor: 'totp' }));
  const write = (s: Storage, ...events: KeptEvent[]) => s.transaction((tx) => s.events.append(events, tx));
  const all = async (account: number, types: readonly string[] = ACTIVITY_TYPES, limit = 1000) =>
    db.events.activity({ applicationId: appId, accountId: account, types, limit });

  beforeAll(() => {
    contract = storage();
    ({ db, on, appId } = contract);
  });

  it('keeps an event with its facts, in the transaction of its change: rolled back, it is gone', async () => {
    const account = await newAccount(contract);
    const at = new Date('2026-11-20T10:00:00.123Z');
    await write(db, signedIn(account.id, at, 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0'));
    await expect(db.transaction(async (tx) => {
      await db.events.append([signedIn(account.id, new Date())], tx);
      throw new Error('the change failed after its event');
    })).rejects.toThrow('the change failed');
    const [only, ...rest] = await all(account.id);
    expect(rest).toEqual([]);
    expect(only).toEqual({
      kind: 'event', id: expect.any(String), at, type: 'account.signed_in', actorKind: 'account', actor: { kind: 'account', accountId: account.id, clientId: 'app-one' },
      data: { method: 'password', factor: 'totp' },
      clientId: 'app-one', address: '192.0.2.7', userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0',
    });
    const [stored] = await db.events.latest(appId, 1, account.id);
    expect(stored).toMatchObject({ type: 'account.signed_in', accountId: account.id, subject: recordSubject(account.id), origin: { requestId: 'req-1' } });
  });

  it('finds an event by its own id, lists an application\'s events since a place and a time in order, and names its newest id', async () => {
    const account = await newAccount(contract);
    const before = await db.events.findNewestId();
    const at = new Date(Date.now() - 60_000);
    const early = signedIn(account.id, new Date(at.getTime() - 1000));
    const a = signedIn(account.id, at);
    const b = signedIn(account.id, new Date(at.getTime() + 1));
    await write(db, early);
    await write(db, a, b);
    const newest = await db.events.findNewestId();
    expect(newest).toBeGreaterThan(before);
    const found = await db.events.findByUid(a.eventId);
    expect(found).toMatchObject({ eventId: a.eventId, type: 'account.signed_in', accountId: account.id, occurredAt: at, data: { method: 'password', factor: 'totp' } });
    expect(await db.events.findByUid(randomUUID())).toBeUndefined();
    const since = (await db.events.listSince(appId, before, at, 100)).filter((e) => e.accountId === account.id);
    expect(since.map((e) => e.eventId)).toEqual([a.eventId, b.eventId]);
    expect(Number(since[0].id)).toBeLessThan(Number(since[1].id));
    expect(await db.events.listSince(appId + 1_000_000, before, at, 100)).toEqual([]);
    expect(await db.events.listSince(appId, newest, at, 100)).toEqual([]);
  });

  it('keeps a user agent of 8 KB cut, and its control characters written out', async () => {
    const account = await newAccount(contract);
    await write(db, signedIn(account.id, new Date(), `evil\u0000\r\n\u001b[31m${'A'.repeat(8192)}`));
    const [entry] = await all(account.id);
    expect(entry.userAgent).toHaveLength(USER_AGENT_MAX);
    expect(entry.userAgent!.startsWith('evil\\u0000\\u000d\\u000a\\u001b[31mAAA')).toBe(true);
  });

  it(`orders one account's events as they were written, whichever node wrote each (${RACE} in turn)`, async () => {
    const account = await newAccount(contract);
    const base = Date.now();
    for (let i = 0; i < RACE; i++) await write(on(i), signedIn(account.id, new Date(base)));
    const ids = (await db.events.latest(appId, RACE, account.id)).map((e) => Number(e.id));
    expect(ids).toHaveLength(RACE);
    // newest first: strictly decreasing, though every event has the same time
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
    expect(new Set(ids).size).toBe(RACE);
  });

  it(`counts ${RACE} concurrent failed sign-ins of one account, reason and minute in one row, on any node`, async () => {
    const account = await newAccount(contract);
    const minute = new Date('2026-11-21T08:15:00.000Z');
    await Promise.all(Array.from({ length: RACE }, (_, i) => on(i).events.countFailureAlone({
      applicationId: appId, accountId: account.id, reason: 'wrong_password', at: new Date(minute.getTime() + 1000 + i), address: '198.51.100.1', clientId: 'app-one',
    })));
    await db.events.countFailureAlone({ applicationId: appId, accountId: account.id, reason: 'wrong_code', at: new Date(minute.getTime() + 5000) });
    await db.events.countFailureAlone({ applicationId: appId, accountId: account.id, reason: 'wrong_password', at: new Date(minute.getTime() + 61_000) });
    const found = await all(account.id, ['account.sign_in_failed']);
    expect(found.map((e) => e.kind === 'failures' && [e.reason, e.count])).toEqual([['wrong_password', 1], ['wrong_code', 1], ['wrong_password', RACE]]);
    expect(found[2]).toMatchObject({ at: new Date(minute.getTime() + 1000), address: '198.51.100.1', clientId: 'app-one' });
  });

  it('lists activity newest first across events and failures, narrowed by types and time, and pages by a cursor that skips nothing', async () => {
    const account = await newAccount(contract);
    const other = await newAccount(contract);
    const t0 = new Date('2026-11-22T12:00:00.000Z').getTime();
    const at = (s: number) => new Date(t0 + s * 1000);
    // at the same time, an event and a minute of failures: the event comes first
    for (let s = 0; s < 7; s++) await write(on(s), signedIn(account.id, at(s * 30)));
    await write(db, kept(event('record.updated', appId, at(1), { actor: { kind: 'system' }, origin: {} }, recordSubject(account.id), { attributes: ['lastLogin'] })));
    await write(db, signedIn(other.id, at(45)));
    for (const s of [0, 60, 120]) await db.events.countFailureAlone({ applicationId: appId, accountId: account.id, reason: 'wrong_password', at: at(s) });
    const whole = await all(account.id);
    const key = (e: ActivityEntry) => `${e.type}@${(e.at.getTime() - t0) / 1000}`;
    expect(whole.map(key)).toEqual([
      'account.signed_in@180', 'account.signed_in@150', 'account.signed_in@120', 'account.sign_in_failed@120', 'account.signed_in@90',
      'account.signed_in@60', 'account.sign_in_failed@60', 'account.signed_in@30', 'account.signed_in@0', 'account.sign_in_failed@0',
    ]);
    // paged by 3: the same entries, none twice
    const paged: ActivityEntry[] = [];
    let cursor: ActivityEntry | undefined;
    for (let page = 0; page < 10; page++) {
      const got = await db.events.activity({ applicationId: appId, accountId: account.id, types: ACTIVITY_TYPES, limit: 3, ...(cursor && { after: { at: cursor.at, kind: cursor.kind, id: cursor.id } }) });
      paged.push(...got);
      if (got.length < 3) break;
      cursor = got[got.length - 1];
    }
    expect(paged.map(key)).toEqual(whole.map(key));
    expect(cursorOf(whole[3])).toMatch(/^\d+\.f\d+$/);
    const narrowed = await db.events.activity({ applicationId: appId, accountId: account.id, types: ['account.sign_in_failed'], limit: 10, since: at(60), until: at(121) });
    expect(narrowed.map(key)).toEqual(['account.sign_in_failed@120', 'account.sign_in_failed@60']);
  });

  it('a sign-in in one call and a rotation write their events with the change; a rotation that spends nothing writes none', async () => {
    const account = await newAccount(contract) as UserRecord;
    const now = new Date();
    const next = updated(account, { attributes: { lastLogin: now.toISOString() } }, now);
    expect(await db.records.signInAlone(account, next, [], [], [signedIn(account.id, now)], now)).toBe(true);
    // the record changed since: nothing written, its event neither
    expect(await db.records.signInAlone(account, next, [], [], [signedIn(account.id, new Date(now.getTime() + 1))], now)).toBe(false);
    const client = await db.transaction((tx) => db.clients.insert({ applicationId: appId, clientId: `c-${randomUUID()}`, secretSealed: 's', description: '', features: [], settings: {} }, now, tx));
    const spent = { applicationId: appId, kind: 'refresh_token' as const, valueHash: hash(), entityId: account.id, clientId: client.id, forClientId: null, redirectUri: null, extra: null, family: 'f', expiresAt: new Date(now.getTime() + 60_000) };
    await db.transaction((tx) => db.credentials.insert([spent], now, tx));
    const successors = () => ({ access: { valueHash: hash(), expiresAt: new Date(now.getTime() + 60_000) }, refresh: { valueHash: hash(), expiresAt: new Date(now.getTime() + 600_000) } });
    const refreshed = { type: 'token.refreshed' as const, version: 1 as const, eventId: randomUUID(), applicationId: appId, occurredAt: now, origin: { address: '203.0.113.9', userAgent: 'curl/8' }, data: {}, clientId: client.clientId };
    const won = await Promise.all(Array.from({ length: RACE }, (_, i) => on(i).credentials.rotateAlone(appId, spent.valueHash, client.id, successors(), now, refreshed)));
    expect(won.filter(Boolean)).toHaveLength(1);
    const events = await db.events.latest(appId, 10, account.id);
    expect(events.map((e) => e.type)).toEqual(['token.refreshed', 'account.signed_in']);
    expect(events[0]).toMatchObject({
      accountId: account.id, actor: { kind: 'account', accountId: account.id, clientId: client.clientId }, subject: recordSubject(account.id),
      origin: { address: '203.0.113.9', userAgent: 'curl/8' }, data: {},
    });
  });

  it('sweeps events and counted failures older than the cutoff, in batches, oldest written first; one written late waits for those before it', async () => {
    const account = await newAccount(contract);
    const old = new Date('2001-01-01T00:00:00Z');
    const cutoff = new Date(Date.now() + 60_000);
    const later = new Date(Date.now() + 3_600_000);
    // every event of the suite so far is older than the cutoff; then one after it, then an old one written after that
    await write(db, signedIn(account.id, old), signedIn(account.id, old), signedIn(account.id, later), signedIn(account.id, old));
    await db.events.countFailureAlone({ applicationId: appId, accountId: account.id, reason: 'wrong_code', at: old });
    let removed = 0;
    for (let n = await db.events.sweepAlone(cutoff, 1); n > 0; n = await db.events.sweepAlone(cutoff, 1)) removed += n;
    expect(removed).toBeGreaterThanOrEqual(3);
    const left = await db.events.latest(appId, 10, account.id);
    expect(left.map((e) => e.occurredAt)).toEqual([old, later]);
    expect(await all(account.id, ['account.sign_in_failed'])).toEqual([]);
  });
});
