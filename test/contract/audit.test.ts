import type { KeptEvent } from '../../src/domain/events';
import { forEveryEngine } from '../helpers/contract';

// The audit store's contract (AuditStore): entries appended in a change's transaction commit or
// roll back with it, come back as they were written (actor, subject, data, origin, time to the
// microsecond), newest first, filtered and paged on every engine.

forEveryEngine('audit store', (storage) => {
  const entry = (appId: number, over: Partial<KeptEvent> = {}): KeptEvent => ({
    type: 'client.secret_reset', version: 1, applicationId: appId, occurredAt: new Date('2026-11-25T10:00:00.123Z'),
    actor: { kind: 'client', clientId: 'owner' }, subject: { kind: 'client', id: 'target' }, origin: { requestId: 'req-1', address: '203.0.113.7' }, data: {},
    ...over,
  } as KeptEvent);
  const append = (events: KeptEvent[]) => storage().db.transaction((tx) => storage().db.audit.append(events, tx));

  it('keeps what it was given, and an appended entry rolls back with its transaction', async () => {
    const { db, appId } = storage();
    await append([
      entry(appId),
      entry(appId, { type: 'account.disabled', actor: { kind: 'operator', name: 'ada' }, subject: { kind: 'record', id: '42' }, origin: {} } as Partial<KeptEvent>),
      entry(appId, { type: 'record.updated', actor: { kind: 'account', accountId: 42, clientId: 'app' }, subject: { kind: 'record', id: '42' }, data: { attributes: ['givenName'] } } as Partial<KeptEvent>),
    ]);
    await expect(db.transaction(async (tx) => {
      await db.audit.append([entry(appId, { type: 'client.deleted' } as Partial<KeptEvent>)], tx);
      throw new Error('rolled back');
    })).rejects.toThrow('rolled back');
    const listed = await db.audit.list({ applicationId: appId, limit: 10 });
    expect(listed.map((e) => e.type)).toEqual(['record.updated', 'account.disabled', 'client.secret_reset']);
    expect(listed[0]).toMatchObject({ actor: { kind: 'account', accountId: 42, clientId: 'app' }, data: { attributes: ['givenName'] }, version: 1 });
    expect(listed[1]).toMatchObject({ actor: { kind: 'operator', name: 'ada' }, subject: { kind: 'record', id: '42' } });
    expect(listed[1].address).toBeUndefined();
    expect(listed[2]).toMatchObject({ actor: { kind: 'client', clientId: 'owner' }, address: '203.0.113.7', requestId: 'req-1' });
    expect(listed[2].occurredAt.toISOString()).toBe('2026-11-25T10:00:00.123Z');
  });

  it('filters by type and family, actor, subject and time; pages by id; never shows another application', async () => {
    const { db, appId } = storage();
    const other = (await db.transaction((tx) => db.applications.create(`other${Date.now()}`, new Date(), tx))).id;
    await append([entry(other, { type: 'client.created' } as Partial<KeptEvent>)]);
    const list = (q: object) => db.audit.list({ applicationId: appId, limit: 10, ...q });
    expect((await list({ type: 'client.' })).map((e) => e.type)).toEqual(['client.secret_reset']);
    expect((await list({ type: 'record.updated' }))).toHaveLength(1);
    // LIKE's own characters are plain characters in a family
    expect(await list({ type: 'client%' })).toEqual([]);
    expect((await list({ actor: { kind: 'operator' } })).map((e) => e.type)).toEqual(['account.disabled']);
    expect((await list({ actor: { kind: 'client', id: 'owner' } })).map((e) => e.type)).toEqual(['client.secret_reset']);
    expect((await list({ subject: { kind: 'record', id: '42' } }))).toHaveLength(2);
    expect(await list({ since: new Date('2026-11-25T10:00:00.124Z') })).toEqual([]);
    expect(await list({ until: new Date('2026-11-25T10:00:00.123Z') })).toEqual([]);
    const [newest, ...rest] = await list({});
    expect(await list({ before: newest.id })).toEqual(rest);
    expect(rest.every((e) => e.applicationId === appId)).toBe(true);
  });
});
