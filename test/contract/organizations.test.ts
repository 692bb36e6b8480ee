import { randomBytes } from 'node:crypto';
import type { StoredOrganization } from '../../src/domain/storage/organizations';
import { forEveryEngine, newAccount } from '../helpers/contract';

// The organizations' contract (OrganizationStore) on every engine: organizations kept as written,
// their slugs unique per application, paged; members with their roles, an account's memberships
// (the active one first); roles defined and removed (their holders keep a role); invitations found
// by their hash and finished once; domains claimed, verified, and joinable by. And the races the use
// cases rely on, spread over every node of a Galera cluster: one acceptance of an invitation, and
// an owner always left when the owners are removed at once.

forEveryEngine('organization store', (storage) => {
  const hex = () => randomBytes(12).toString('hex');
  const create = (slug = `acme-${hex().slice(0, 8)}`, over: Partial<StoredOrganization> = {}) => storage().db.transaction(async (tx) => (await storage().db.organizations.insert({
    applicationId: storage().appId, organizationId: `org_${hex()}`, name: 'Acme', slug, logoUrl: null, metadata: { plan: 'pro' }, joinByDomain: false, defaultRoles: ['member'], ...over,
  }, new Date(), tx))!);

  it('keeps an organization as written, finds it by id, slug and key, refuses a taken slug, and pages the list', async () => {
    const { db, appId } = storage();
    const slug = `acme-${hex().slice(0, 8)}`;
    const made = await create(slug, { logoUrl: 'https://cdn.example.com/a.png', joinByDomain: true, defaultRoles: ['admin', 'member'] });
    expect(made).toMatchObject({ name: 'Acme', slug, logoUrl: 'https://cdn.example.com/a.png', metadata: { plan: 'pro' }, joinByDomain: true, defaultRoles: ['admin', 'member'] });
    expect(await db.organizations.find(appId, made.organizationId)).toEqual(made);
    expect(await db.organizations.findBySlug(appId, slug)).toEqual(made);
    expect(await db.organizations.findByKey(made.id)).toEqual(made);
    expect(await db.organizations.find(appId + 1_000_000, made.organizationId)).toBeUndefined();
    expect(await db.transaction((tx) => db.organizations.insert({ ...made, organizationId: `org_${hex()}` }, new Date(), tx))).toBeUndefined();
    const other = await create();
    expect(await db.transaction((tx) => db.organizations.update(other, { slug }, new Date(), tx))).toBe(false);
    expect(await db.transaction((tx) => db.organizations.update(other, { name: 'Other', metadata: {} }, new Date(), tx))).toBe(true);
    expect(await db.organizations.findByKey(other.id)).toMatchObject({ name: 'Other', metadata: {}, slug: other.slug });
    const first = await db.organizations.listPage(appId, made.id - 1, 1);
    expect(first.items.map((o) => o.id)).toEqual([made.id]);
    expect(first.next).toBe(made.id);
    const second = await db.organizations.listPage(appId, first.next, 1);
    expect(second.items[0].id).toBeGreaterThan(made.id);
  });

  it('keeps members with their roles sorted, once each; counts them and each role; lists an account\'s memberships, the active one first', async () => {
    const { db, appId } = storage();
    const a = await create();
    const b = await create();
    const ada = await newAccount(storage());
    const grace = await newAccount(storage());
    const now = new Date();
    const member = (await db.transaction((tx) => db.organizations.insertMember(a, ada.id, ['owner', 'admin', 'owner'], 'created', now, tx)))!;
    expect(member).toMatchObject({ organizationKey: a.id, entityId: ada.id, roles: ['admin', 'owner'], joinedBy: 'created', activeAt: null });
    expect(await db.transaction((tx) => db.organizations.insertMember(a, ada.id, ['member'], 'api', now, tx))).toBeUndefined();
    await db.transaction((tx) => db.organizations.insertMember(a, grace.id, ['member'], 'invitation', now, tx));
    await db.transaction((tx) => db.organizations.insertMember(b, ada.id, ['member'], 'api', now, tx));
    expect(await db.organizations.countMembers(a.id)).toBe(2);
    expect(await db.organizations.countWithRole(a.id, 'owner')).toBe(1);
    expect(await db.organizations.countMembershipsOf(ada.id)).toBe(2);
    const page = await db.organizations.listMembersPage(a.id, null, 10);
    expect(page.items.map((m) => [m.uuid, m.email, m.roles])).toEqual([[ada.uuid, ada.email, ['admin', 'owner']], [grace.uuid, grace.email, ['member']]]);
    expect((await db.organizations.listMembershipsOf(appId, ada.id, 10)).map((m) => m.organization.organizationId)).toEqual([a.organizationId, b.organizationId]);
    expect(await db.organizations.listOrganizationRolesOf(appId, ada.id, 10)).toEqual([{ organizationId: a.organizationId, roles: ['admin', 'owner'] }, { organizationId: b.organizationId, roles: ['member'] }]);
    expect(await db.organizations.listOrganizationRolesOf(appId, ada.id, 1)).toEqual([{ organizationId: a.organizationId, roles: ['admin', 'owner'] }]);
    await db.transaction((tx) => db.organizations.defineRole(appId, { name: 'admin', description: '', permissions: ['manage:billing'] }, new Date(), tx));
    expect(await db.organizations.findRolesOf(appId, ada.uuid, a.organizationId)).toEqual([{ role: 'admin', permissions: ['manage:billing'] }, { role: 'owner', permissions: [] }]);
    expect(await db.organizations.findRolesOf(appId, grace.uuid, b.organizationId)).toBeUndefined();
    const inB = (await db.organizations.findMember(b.id, ada.id))!;
    await db.transaction((tx) => db.organizations.setActive(inB, new Date(), tx));
    const memberships = await db.organizations.listMembershipsOf(appId, ada.id, 10);
    expect(memberships.map((m) => [m.organization.organizationId, m.member.roles])).toEqual([[b.organizationId, ['member']], [a.organizationId, ['admin', 'owner']]]);
    expect(memberships[0].organization).toEqual(b);
    await db.transaction((tx) => db.organizations.setRoles(member, ['member'], new Date(), tx));
    expect((await db.organizations.findMember(a.id, ada.id))!.roles).toEqual(['member']);
    expect(await db.organizations.countWithRole(a.id, 'owner')).toBe(0);
    expect(await db.organizations.findDeparture(a.id, grace.id)).toBeUndefined();
    expect(await db.transaction((tx) => db.organizations.removeMember(a.id, grace.id, new Date(), tx))).toBe(true);
    expect(await db.transaction((tx) => db.organizations.removeMember(a.id, grace.id, new Date(), tx))).toBe(false);
    // a departure is remembered: joining by a domain keeps it, joining on purpose forgets it
    expect(await db.organizations.findDeparture(a.id, grace.id)).toEqual(expect.any(Date));
    await db.transaction((tx) => db.organizations.insertMember(a, grace.id, ['member'], 'domain', new Date(), tx));
    expect(await db.organizations.findDeparture(a.id, grace.id)).toEqual(expect.any(Date));
    await db.transaction((tx) => db.organizations.removeMember(a.id, grace.id, new Date(), tx));
    await db.transaction((tx) => db.organizations.insertMember(a, grace.id, ['member'], 'invitation', new Date(), tx));
    expect(await db.organizations.findDeparture(a.id, grace.id)).toBeUndefined();
    await db.transaction((tx) => db.organizations.remove(b, tx));
    expect(await db.organizations.findByKey(b.id)).toBeUndefined();
    expect(await db.organizations.countMembershipsOf(ada.id)).toBe(1);
  });

  it('defines roles (again, replacing), lists them by name, and removes one: its holders lose it, one left with none gets the fallback', async () => {
    const { db, appId } = storage();
    const name = `billing_${hex().slice(0, 6)}`;
    await db.transaction((tx) => db.organizations.defineRole(appId, { name, description: 'Billing', permissions: ['read:invoices'] }, new Date(), tx));
    const again = await db.transaction((tx) => db.organizations.defineRole(appId, { name, description: 'Pays', permissions: ['pay:invoices', 'read:invoices'] }, new Date(), tx));
    expect(again).toMatchObject({ name, description: 'Pays', permissions: ['pay:invoices', 'read:invoices'] });
    expect((await db.organizations.listRoles(appId)).find((r) => r.name === name)).toMatchObject({ permissions: ['pay:invoices', 'read:invoices'] });
    const o = await create(undefined, { defaultRoles: [name] });
    const mixed = await create(undefined, { defaultRoles: ['admin', name] });
    const only = await newAccount(storage());
    const both = await newAccount(storage());
    await db.transaction((tx) => db.organizations.insertMember(o, only.id, [name], 'api', new Date(), tx));
    await db.transaction((tx) => db.organizations.insertMember(o, both.id, [name, 'admin'], 'api', new Date(), tx));
    expect(await db.transaction((tx) => db.organizations.removeRole(appId, name, 'member', new Date(), tx))).toBe(2);
    expect((await db.organizations.findMember(o.id, only.id))!.roles).toEqual(['member']);
    expect((await db.organizations.findMember(o.id, both.id))!.roles).toEqual(['admin']);
    expect((await db.organizations.findByKey(o.id))!.defaultRoles).toEqual(['member']);
    expect((await db.organizations.findByKey(mixed.id))!.defaultRoles).toEqual(['admin']);
    expect(await db.transaction((tx) => db.organizations.removeRole(appId, name, 'member', new Date(), tx))).toBeUndefined();
  });

  it('keeps an invitation, finds it by its hash, finishes it once, counts the recent ones by organization and inviter, pages them newest first', async () => {
    const { db, appId } = storage();
    const o = await create();
    const hash = hex() + hex().slice(0, 16);
    const inviter = `client:${hex()}`;
    const made = await db.transaction((tx) => db.organizations.insertInvitation({
      applicationId: appId, organizationKey: o.id, invitationId: `inv_${hex()}`, email: 'grace@acme.example', roles: ['admin'], inviterEntityId: null, inviter,
      locale: 'fr-FR', tokenHash: hash, expiresAt: new Date(Date.UTC(2030, 0, 1)),
    }, new Date(), tx));
    expect(made).toMatchObject({ email: 'grace@acme.example', roles: ['admin'], inviter, locale: 'fr-FR', state: 'pending', acceptedBy: null, expiresAt: new Date(Date.UTC(2030, 0, 1)) });
    expect(await db.organizations.findInvitationByToken(hash)).toEqual(made);
    expect(await db.organizations.findInvitation(appId, made.invitationId)).toEqual(made);
    const hourAgo = new Date(Date.now() - 3600_000);
    expect(await db.organizations.countInvitationsSince({ organizationKey: o.id }, hourAgo)).toBe(1);
    expect(await db.organizations.countInvitationsSince({ applicationId: appId, inviter }, hourAgo)).toBe(1);
    expect(await db.organizations.countInvitationsSince({ applicationId: appId, inviter }, new Date(Date.now() + 1000))).toBe(0);
    const second = await db.transaction((tx) => db.organizations.insertInvitation({ ...made, invitationId: `inv_${hex()}`, tokenHash: hex() + hex().slice(0, 16) }, new Date(), tx));
    const page = await db.organizations.listInvitationsPage(o.id, null, 1);
    expect(page.items.map((i) => i.invitationId)).toEqual([second.invitationId]);
    expect((await db.organizations.listInvitationsPage(o.id, page.next, 1)).items.map((i) => i.invitationId)).toEqual([made.invitationId]);
    const account = await newAccount(storage());
    expect(await db.transaction((tx) => db.organizations.finishInvitation(made, 'accepted', account.id, new Date(), tx))).toBe(true);
    expect(await db.transaction((tx) => db.organizations.finishInvitation(made, 'revoked', null, new Date(), tx))).toBe(false);
    expect(await db.organizations.findInvitationByToken(hash)).toMatchObject({ state: 'accepted', acceptedBy: account.id });
  });

  it('claims a domain once, verifies it once, and only a verified claim the application made joinable, of an organization that lets accounts join, is joinable', async () => {
    const { db, appId } = storage();
    const domain = `${hex().slice(0, 8)}.example`;
    const open = await create(undefined, { joinByDomain: true });
    const closed = await create(undefined, { joinByDomain: false });
    expect(await db.transaction((tx) => db.organizations.insertDomain(open, domain, null, false, new Date(), tx))).toBe(true);
    expect(await db.transaction((tx) => db.organizations.insertDomain(open, domain, 'operator', true, new Date(), tx))).toBe(false);
    await db.transaction((tx) => db.organizations.insertDomain(closed, domain, 'operator', true, new Date(), tx));
    expect(await db.organizations.listJoinableByDomain(appId, domain)).toEqual([]);
    expect(await db.transaction((tx) => db.organizations.verifyDomain(open.id, domain, 'member', new Date(), tx))).toBe(true);
    expect(await db.transaction((tx) => db.organizations.verifyDomain(open.id, domain, 'operator', new Date(), tx))).toBe(false);
    expect((await db.organizations.listDomains(open.id))[0]).toMatchObject({ domain, verifiedBy: 'member', joinableAt: null });
    // verified by a member: nobody joins until the application makes it joinable
    expect(await db.organizations.listJoinableByDomain(appId, domain)).toEqual([]);
    expect(await db.organizations.listJoinableDomains(appId)).not.toContain(domain);
    expect(await db.transaction((tx) => db.organizations.setDomainJoinable(open.id, domain, true, new Date(), tx))).toBe(true);
    expect((await db.organizations.listDomains(open.id))[0]).toMatchObject({ domain, verifiedBy: 'member', joinableAt: expect.any(Date) });
    expect((await db.organizations.listJoinableByDomain(appId, domain)).map((o) => o.id)).toEqual([open.id]);
    expect(await db.organizations.listJoinableDomains(appId)).toContain(domain);
    expect(await db.transaction((tx) => db.organizations.setDomainJoinable(open.id, `other-${domain}`, true, new Date(), tx))).toBe(false);
    expect(await db.transaction((tx) => db.organizations.removeDomain(open.id, domain, tx))).toBe(true);
    expect(await db.organizations.listJoinableByDomain(appId, domain)).toEqual([]);
  });

  it('20 acceptances of one invitation at once, over every node: one finishes it and makes the membership', async () => {
    const { db, appId, on } = storage();
    const o = await create();
    const account = await newAccount(storage());
    const invitation = await db.transaction((tx) => db.organizations.insertInvitation({
      applicationId: appId, organizationKey: o.id, invitationId: `inv_${hex()}`, email: account.email!, roles: ['member'], inviterEntityId: null, inviter: 'client:x',
      locale: 'en-US', tokenHash: hex() + hex().slice(0, 16), expiresAt: new Date(Date.now() + 86_400_000),
    }, new Date(), tx));
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => on(i).transaction(async (tx) => {
      const node = on(i).organizations;
      const found = (await node.findInvitationByToken(invitation.tokenHash, tx))!;
      if (found.state !== 'pending' || !(await node.finishInvitation(found, 'accepted', account.id, new Date(), tx))) return false;
      await node.touch(o.id, new Date(), tx);
      return (await node.insertMember(o, account.id, found.roles, 'invitation', new Date(), tx)) !== undefined;
    })));
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    expect(await db.organizations.countMembers(o.id)).toBe(1);
  });

  it('the two last owners removed 20 times at once, over every node, each removal counting the owners first: one owner is left', async () => {
    const { db, on } = storage();
    const o = await create();
    const owners = [await newAccount(storage()), await newAccount(storage())];
    for (const owner of owners) await db.transaction((tx) => db.organizations.insertMember(o, owner.id, ['owner'], 'api', new Date(), tx));
    const removed = await Promise.all(Array.from({ length: 20 }, (_, i) => on(i).transaction(async (tx) => {
      const node = on(i).organizations;
      await node.findByKey(o.id, tx);
      await node.touch(o.id, new Date(), tx);
      if ((await node.countWithRole(o.id, 'owner', tx)) <= 1) return false;
      return node.removeMember(o.id, owners[i % 2].id, new Date(), tx);
    })));
    expect(removed.filter(Boolean)).toHaveLength(1);
    expect(await db.organizations.countWithRole(o.id, 'owner')).toBe(1);
  });

  it('one person removed from two organizations at once, 10 times over every node, each removal claiming the memberships left: one of the two finds none', async () => {
    const { db, on } = storage();
    for (let round = 0; round < 10; round++) {
      const orgs = [await create(), await create()];
      const person = await newAccount(storage());
      for (const o of orgs) await db.transaction((tx) => db.organizations.insertMember(o, person.id, ['member'], 'api', new Date(), tx));
      // each as a directory deprovisions: its own membership removed, then whether any is left
      const left = await Promise.all(orgs.map((o, i) => on(i + round).transaction(async (tx) => {
        const node = on(i + round).organizations;
        await node.removeMember(o.id, person.id, new Date(), tx);
        return node.claimMembershipsOf(person.id, new Date(), tx);
      })));
      expect(left.sort()).toEqual([0, 1]);
      expect(await db.organizations.countMembershipsOf(person.id)).toBe(0);
    }
  });
});
