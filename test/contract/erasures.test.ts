import { randomUUID } from 'node:crypto';
import type { KeptEvent } from '../../src/domain/events';
import { forEveryEngine } from '../helpers/contract';

// The erasures' and imports' contracts (ErasureStore, ImportStore) on every engine: a purge removes
// or clears every row naming the record and nothing of anyone else's (an address that contains the
// erased one included), finds nothing the second time, and a tombstone is kept once; an import's
// progress commits and rolls back with its batch.

forEveryEngine('erasure and import stores', (storage) => {
  const user = async (email: string) => {
    const { db, appId } = storage();
    return db.transaction((tx) => db.records.insert({
      applicationId: appId, typeName: 'user', uuid: randomUUID(), email, username: null, passwordHash: null, emailVerified: null, attributes: { givenName: 'Zed' },
    }, new Date(), tx));
  };
  const event = (appId: number, accountId: number, type = 'account.signed_in'): KeptEvent => ({
    type, version: 1, eventId: randomUUID(), applicationId: appId, occurredAt: new Date(), accountId,
    actor: { kind: 'account', accountId }, subject: { kind: 'record', id: String(accountId) },
    origin: { address: '203.0.113.9', userAgent: 'Firefox', requestId: 'r1' }, data: { method: 'password' },
  } as unknown as KeptEvent);

  it('purges what names the record, keeps what names another (joann@ beside ann@, a value that is a member\'s name), and a second purge finds nothing', async () => {
    const { db, appId } = storage();
    const suffix = randomUUID().slice(0, 8);
    const ann = await user(`ann-${suffix}@x.example`);
    const joann = await user(`joann-${suffix}@x.example`);
    const needles = { emails: [ann.email!], uuids: [ann.uuid], identifiers: ['email'] };
    let organizationKey = 0;
    await db.transaction(async (tx) => {
      await db.events.append([event(appId, ann.id), event(appId, joann.id)], tx);
      await db.audit.append([event(appId, ann.id), event(appId, joann.id)], tx);
      await db.outbox.insert([
        { id: randomUUID(), applicationId: appId, queue: 'mail', name: 'send', payload: { to: ann.email!, template: 'welcome', locale: 'en-US', appName: 'contract', name: 'Ann' } },
        { id: randomUUID(), applicationId: appId, queue: 'mail', name: 'send', payload: { to: joann.email!, template: 'welcome', locale: 'en-US', appName: 'contract', name: 'Joann' } },
        // another person's mail greeting someone named like ann's address, and another record's pending snapshot
        { id: randomUUID(), applicationId: appId, queue: 'mail', name: 'send', payload: { to: `x-${suffix}@x.example`, template: 'welcome', locale: 'en-US', appName: 'contract', name: ann.email!, newEmail: 'email' } },
        { id: randomUUID(), applicationId: appId, queue: 'versions', name: 'snapshot', entityId: joann.id, payload: { entityId: joann.id, uuid: joann.uuid, version: 2, validFrom: new Date().toISOString(), snapshot: { email: joann.email, note: ann.email } } },
        { id: randomUUID(), applicationId: appId, queue: 'versions', name: 'snapshot', entityId: ann.id, payload: { entityId: ann.id, uuid: ann.uuid, version: 2, validFrom: new Date().toISOString(), snapshot: { email: 'ann-old@x.example' } } },
      ], new Date(), tx);
      // an organization: both are members; invitations to each address, and one ann sent
      const org = (await db.organizations.insert({
        applicationId: appId, organizationId: `org_${randomUUID().replace(/-/g, '').slice(0, 24)}`, name: 'Acme', slug: `acme-${suffix}`, logoUrl: null, metadata: {}, joinByDomain: false, defaultRoles: ['member'],
      }, new Date(), tx))!;
      for (const who of [ann, joann]) await db.organizations.insertMember(org, who.id, ['member'], 'api', new Date(), tx);
      const invitation = (email: string, inviter: number | null) => db.organizations.insertInvitation({
        applicationId: appId, organizationKey: org.id, invitationId: `inv_${randomUUID().replace(/-/g, '').slice(0, 24)}`, email, roles: ['member'],
        inviterEntityId: inviter, inviter: inviter === null ? 'client:x' : `account:${inviter}`, locale: 'en-US', tokenHash: randomUUID().replace(/-/g, '') + randomUUID().replace(/-/g, ''),
        expiresAt: new Date(Date.now() + 86_400_000),
      }, new Date(), tx);
      await invitation(ann.email!, null);
      await invitation(joann.email!, null);
      await invitation(`friend-${suffix}@x.example`, ann.id);
      organizationKey = org.id;
      await db.credentials.insert([{
        applicationId: appId, kind: 'social_token', valueHash: randomUUID().replace(/-/g, ''), entityId: null, clientId: null, forClientId: null, redirectUri: null,
        extra: { profile: { email: ann.email } }, family: null, expiresAt: new Date(Date.now() + 600_000),
      }], new Date(), tx);
    });
    // what the history names, beside the record: the address it had before
    expect(await db.transaction((tx) => db.erasures.namesInHistory(appId, ann.id, tx))).toEqual({ emails: ['ann-old@x.example'], uuids: [ann.uuid], identifiers: [] });

    const first = await db.transaction(async (tx) => {
      await db.records.remove(ann, tx);
      const counts = await db.erasures.purge(appId, ann.id, needles, '', tx);
      expect(await db.erasures.markErased(appId, ann.id, new Date('2026-11-27T10:00:00.000Z'), 'digest-of-ann', tx)).toBe(true);
      return counts;
    });
    // (its membership went with its record's row; the invitation to its address goes with the purge)
    expect(first).toMatchObject({ outboxRows: 2, events: 1, auditEntries: 1, credentials: 1, organizationRows: 1 });
    expect(await db.erasures.purgeAlone(appId, ann.id, needles, '')).toEqual({ snapshots: 0, outboxRows: 0, events: 0, failures: 0, auditEntries: 0, oidcState: 0, credentials: 0, webhookDeliveries: 0, logoutDeliveries: 0, organizationRows: 0 });
    // joann's membership and invitation stay; the invitation ann sent no longer names her
    expect((await db.organizations.listMembersPage(organizationKey, null, 10)).items.map((m) => m.entityId)).toEqual([joann.id]);
    const left = (await db.organizations.listInvitationsPage(organizationKey, null, 10)).items;
    expect(left.map((i) => [i.email, i.inviter, i.inviterEntityId]).sort()).toEqual([[`friend-${suffix}@x.example`, 'account:erased', null], [joann.email, 'client:x', null]].sort());
    expect(await db.transaction((tx) => db.erasures.markErased(appId, ann.id, new Date(), 'digest-of-ann', tx))).toBe(false);
    // the tombstone is found by its uuid's digest, never by the uuid (which it does not keep)
    expect(await db.erasures.erasedByUuid(appId, 'digest-of-ann')).toBe(ann.id);
    expect(await db.erasures.erasedByUuid(appId, ann.uuid)).toBeUndefined();
    expect(await db.erasures.scrubFilesAlone()).toBe(true);
    expect((await db.erasures.erasedAt(appId, ann.id))?.toISOString()).toBe('2026-11-27T10:00:00.000Z');
    expect(await db.erasures.erasedAt(appId, joann.id)).toBeUndefined();

    // joann's rows are as they were
    const [kept] = await db.events.latest(appId, 1, joann.id);
    expect(kept).toMatchObject({ data: { method: 'password' }, origin: { address: '203.0.113.9', userAgent: 'Firefox' } });
    const [erased] = await db.events.latest(appId, 1, ann.id);
    expect(erased.data).toEqual({});
    expect(erased.origin.address).toBeUndefined();
    expect((await db.records.find(appId, { id: joann.id }))?.email).toBe(joann.email);
    // the other mails and the other record's snapshot are still pending: an identity named "email" matched no member's name
    expect(await db.outbox.backlog()).toEqual(expect.arrayContaining([expect.objectContaining({ queue: 'mail', pending: 2 }), expect.objectContaining({ queue: 'versions', pending: 1 })]));
  });

  it("an import's progress commits with its batch, and rolls back with it", async () => {
    const { db, appId } = storage();
    const key = randomUUID().replace(/-/g, '');
    expect(await db.imports.progress(appId, key)).toEqual({ linesDone: 0, created: 0 });
    await db.transaction((tx) => db.imports.advance(appId, key, 500, 498, new Date(), tx));
    await expect(db.transaction(async (tx) => {
      await db.imports.advance(appId, key, 1000, 500, new Date(), tx);
      throw new Error('the batch failed');
    })).rejects.toThrow('the batch failed');
    expect(await db.imports.progress(appId, key)).toEqual({ linesDone: 500, created: 498 });
    await db.transaction((tx) => db.imports.advance(appId, key, 1000, 500, new Date(), tx));
    expect(await db.imports.progress(appId, key)).toEqual({ linesDone: 1000, created: 998 });
  });
});
