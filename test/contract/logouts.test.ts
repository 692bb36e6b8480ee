import { randomUUID } from 'node:crypto';
import { forEveryEngine } from '../helpers/contract';

// The logout tokens' contract (LogoutStore) on every engine: kept as written, pending, found by
// jti; an attempt recorded while pending only (of two workers finishing one, one does), its
// account's public id forgotten in the same statement when asked; a client's listed newest first,
// no other client's among them; finished ones purged by age, pending ones never.

forEveryEngine('logout store', (storage) => {
  const add = (clientId: string, at = new Date(), applicationId = storage().appId) => {
    const jti = randomUUID();
    return storage().db.transaction((tx) => storage().db.logouts.insert([{ applicationId, clientId, accountId: 7, subject: randomUUID(), sid: 'sid-1', jti }], at, tx)).then(() => jti);
  };

  it('keeps one pending as written; an attempt is recorded while it is pending only, the account forgotten when asked', async () => {
    const { db } = storage();
    const client = `c-${randomUUID()}`;
    const jti = await add(client);
    expect(await db.logouts.find(jti)).toMatchObject({ jti, clientId: client, accountId: 7, sid: 'sid-1', state: 'pending', attempts: 0, lastStatus: null, finishedAt: null });
    const now = new Date();
    expect(await db.logouts.recordAttemptAlone(jti, { status: 503, ms: 12, answer: 'down', state: 'pending' }, now)).toBe(true);
    expect(await db.logouts.find(jti)).toMatchObject({ state: 'pending', attempts: 1, lastStatus: 503, lastMs: 12, lastAnswer: 'down', finishedAt: null });
    const done = await Promise.all([1, 2].map(() => db.logouts.recordAttemptAlone(jti, { status: 200, ms: 3, answer: '', state: 'delivered', forgetSubject: true }, now)));
    expect(done.sort()).toEqual([false, true]);
    expect(await db.logouts.find(jti)).toMatchObject({ state: 'delivered', attempts: 2, lastStatus: 200, subject: null, sid: null, finishedAt: expect.any(Date) });
    expect(await db.logouts.recordAttemptAlone(jti, { status: null, ms: 0, answer: 'late', state: 'failed' }, now)).toBe(false);
  });

  it('lists a client\'s newest first, only its own; purges finished ones by age, never a pending one', async () => {
    const { db, appId } = storage();
    const client = `c-${randomUUID()}`;
    const long = new Date(Date.now() - 40 * 86_400_000);
    const [a, b, c] = [await add(client, long), await add(client, long), await add(client)];
    await add(`c-${randomUUID()}`);
    expect((await db.logouts.list(appId, client, 10)).map((l) => l.jti)).toEqual([c, b, a]);
    expect((await db.logouts.list(appId, client, 2)).map((l) => l.jti)).toEqual([c, b]);
    await db.logouts.recordAttemptAlone(a, { status: 204, ms: 1, answer: '', state: 'delivered' }, long);
    expect(await db.logouts.purgeFinishedAlone(new Date(Date.now() - 30 * 86_400_000), 100)).toBeGreaterThanOrEqual(1);
    expect(await db.logouts.find(a)).toBeUndefined();
    expect(await db.logouts.find(b)).toMatchObject({ state: 'pending' });
  });
});
