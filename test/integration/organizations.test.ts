import type { ParsedMail } from 'mailparser';
import request from 'supertest';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { mailsTo as mailsWritten } from '../helpers/mail-files';

// docs/organizations.md through the API: the application's backend makes organizations, defines
// roles, adds members; members act with their access tokens (owners and admins invite, change
// roles and remove, everyone leaves and switches); an invitation is mailed in the invitee's
// language and accepted once, by the invited address only; a verified domain lets accounts join
// as they sign in. Every change is in the audit log and the account's activity; each spec error
// names its argument.

const clock = manualClock();
let t: TestApp;
let owner: string;
let loginId: string;

const post = (path: string, params: Record<string, string>, auth?: string) => {
  const r = request(t.app).post(path).type('form');
  return (auth ? r.set('Authorization', auth) : r).send(params);
};
const byBackend = (path: string, params: Record<string, string>) => post(path, params, owner);
const byToken = (path: string, token: string, params: Record<string, string> = {}) => post(path, { ...params, access_token: token });
const bearer = (token: string) => `Bearer ${token}`;
const register = async (email: string, locale = 'en-US') => {
  const r = await post('/oauth/register_native_traditional', {
    client_id: loginId, locale, emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Ada', lastName: 'Lovelace', displayName: email.split('@')[0],
  });
  expect(r.body.stat).toBe('ok');
  return { token: r.body.access_token as string, uuid: r.body.capture_user.uuid as string, email };
};
const signIn = async (email: string) => {
  const r = await post('/oauth/auth_native_traditional', { client_id: loginId, locale: 'en-US', signInEmailAddress: email, currentPassword: 'correct horse battery' });
  expect(r.body.stat).toBe('ok');
  return r.body.access_token as string;
};
const verified = (uuid: string) => byBackend('/entity.update', { type_name: 'user', uuid, attributes: JSON.stringify({ emailVerified: '2026-11-27 10:00:00' }) });
const mailsTo = (to: string) => mailsWritten(t.runtime, to);
const linkIn = (mail: ParsedMail) => new URL(mail.text!.match(/https?:\/\/\S+/)![0]);
const unique = () => Math.random().toString(36).slice(2, 10);

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ACCOUNT: '1000/600', MAIL_LIMIT_RECIPIENT: '1000/3600', MAIL_LIMIT_ADDRESS: '100000/3600', REGISTRATION_LIMIT: '100000/3600' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  loginId = t.local.clients.login.client_id;
});
afterAll(() => t?.close());

it('the backend defines a role, makes an organization with its owner, adds a member, changes roles, pages, removes; the audit log and the activity show each change', async () => {
  const ada = await register(`ada-${unique()}@acme.example`);
  const grace = await register(`grace-${unique()}@acme.example`);
  const defined = await byBackend('/organizations/roles/define', { name: 'billing', description: 'Pays the invoices', permissions: '["read:invoices","pay:invoices"]' });
  expect(defined.body).toMatchObject({ stat: 'ok', result: { name: 'billing', permissions: ['pay:invoices', 'read:invoices'], built_in: false } });
  expect((await byBackend('/organizations/roles/list', {})).body.results.map((r: { name: string }) => r.name)).toEqual(expect.arrayContaining(['owner', 'admin', 'member', 'billing']));

  const slug = `acme-${unique()}`;
  const made = await byBackend('/organizations/create', { name: 'Acme Corporation', slug, metadata: '{"plan":"enterprise"}', owner_uuid: ada.uuid });
  expect(made.body).toMatchObject({ stat: 'ok', id: expect.stringMatching(/^org_[0-9a-f]{24}$/), result: { name: 'Acme Corporation', slug, metadata: { plan: 'enterprise' }, default_roles: ['member'] } });
  const id = made.body.id as string;
  expect((await byBackend('/organizations/get', { slug })).body.result.id).toBe(id);
  expect((await byBackend('/organizations/get', { organization_id: id })).body.result.slug).toBe(slug);

  expect((await byBackend('/organizations/members/add', { organization_id: id, uuid: grace.uuid, roles: '["billing"]' })).body).toEqual({ stat: 'ok', roles: ['billing'] });
  expect((await byBackend('/organizations/members/set_roles', { organization_id: id, uuid: grace.uuid, roles: 'admin,billing' })).body.roles).toEqual(['admin', 'billing']);
  const first = await byBackend('/organizations/members/list', { organization_id: id, max_results: '1' });
  expect(first.body.results).toEqual([expect.objectContaining({ user_id: ada.uuid, roles: ['owner'], joined_by: 'created' })]);
  const second = await byBackend('/organizations/members/list', { organization_id: id, max_results: '1', cursor: first.body.next_cursor });
  expect(second.body).toMatchObject({ results: [{ user_id: grace.uuid, roles: ['admin', 'billing'], joined_by: 'api' }], next_cursor: null });
  expect((await byBackend('/organizations/of', { uuid: grace.uuid })).body.results).toEqual([expect.objectContaining({ id, roles: ['admin', 'billing'], active: false })]);

  const updated = await byBackend('/organizations/update', { organization_id: id, name: 'Acme Corp', logo_url: 'https://cdn.example.com/acme.png' });
  expect(updated.body.result).toMatchObject({ name: 'Acme Corp', logo_url: 'https://cdn.example.com/acme.png', slug });
  expect((await byBackend('/organizations/members/remove', { organization_id: id, uuid: grace.uuid })).body.stat).toBe('ok');

  const audit = await byBackend('/audit/list', { type: 'organization.' });
  expect(audit.body.results.slice(0, 6).map((e: { type: string }) => e.type)).toEqual([
    'organization.member_removed', 'organization.updated', 'organization.member_roles_changed', 'organization.member_added', 'organization.member_added', 'organization.created',
  ]);
  const activity = await byBackend('/entity.activity', { type_name: 'user', uuid: grace.uuid });
  expect(activity.body.results.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(['organization.member_removed', 'organization.member_roles_changed', 'organization.member_added']));
});

it('members act with their access tokens: an owner invites in the invitee\'s language; admins manage but never touch owners; a member only leaves; everyone switches', async () => {
  const ada = await register(`ada-${unique()}@acme.example`);
  const made = await byBackend('/organizations/create', { name: 'Globex', slug: `globex-${unique()}`, owner_uuid: ada.uuid });
  const id = made.body.id as string;
  const admin = await register(`admin-${unique()}@acme.example`);
  const member = await register(`member-${unique()}@acme.example`);
  await byBackend('/organizations/members/add', { organization_id: id, uuid: admin.uuid, roles: 'admin' });
  await byBackend('/organizations/members/add', { organization_id: id, uuid: member.uuid, roles: 'member' });

  const invitee = `new-${unique()}@partner.example`;
  const invited = await byToken('/organizations/invitations/create', ada.token, { organization_id: id, email: invitee.toUpperCase(), roles: 'member', locale: 'fr-FR' });
  expect(invited.body).toMatchObject({ stat: 'ok', id: expect.stringMatching(/^inv_/), result: { email: invitee, roles: ['member'], state: 'pending', locale: 'fr-FR' } });
  const [mail] = await mailsTo(invitee);
  expect(mail.subject).toContain('Globex');
  expect(mail.subject).toMatch(/vous invite/);
  expect(linkIn(mail).pathname).toBe('/invitation');
  expect(JSON.stringify(invited.body)).not.toContain(linkIn(mail).searchParams.get('token'));
  // the page speaks the invitation's language, whatever the browser's (its link names it; without it, the invitation's own)
  for (const query of [linkIn(mail).search, `?token=${linkIn(mail).searchParams.get('token')}`]) {
    const page = await request(t.app).get(`/invitation${query}`).set('Accept-Language', 'en-US');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<html lang="fr"');
  }

  // an admin may not invite an owner nor make one, nor remove the owner
  expect((await byToken('/organizations/invitations/create', admin.token, { organization_id: id, email: `x-${unique()}@partner.example`, roles: 'owner' })).body).toMatchObject({ stat: 'error', code: 403 });
  expect((await byToken('/organizations/members/set_roles', admin.token, { organization_id: id, uuid: member.uuid, roles: 'owner' })).body).toMatchObject({ stat: 'error', code: 403 });
  expect((await byToken('/organizations/members/remove', admin.token, { organization_id: id, uuid: ada.uuid })).body).toMatchObject({ stat: 'error', code: 403 });
  expect((await byToken('/organizations/members/set_roles', admin.token, { organization_id: id, uuid: member.uuid, roles: 'admin' })).body.roles).toEqual(['admin']);
  expect((await byToken('/organizations/members/set_roles', admin.token, { organization_id: id, uuid: member.uuid, roles: 'member' })).body.roles).toEqual(['member']);
  // a member may not invite nor remove others, but leaves
  expect((await byToken('/organizations/invitations/create', member.token, { organization_id: id, email: `y-${unique()}@partner.example` })).body).toMatchObject({ stat: 'error', code: 403 });
  expect((await byToken('/organizations/members/remove', member.token, { organization_id: id, uuid: admin.uuid })).body).toMatchObject({ stat: 'error', code: 403 });
  // an account of no organization reads nothing of it
  const stranger = await register(`stranger-${unique()}@else.example`);
  expect((await byToken('/organizations/members/list', stranger.token, { organization_id: id })).body).toMatchObject({ stat: 'error', code: 403 });

  // switching: the active organization comes first
  const other = (await byBackend('/organizations/create', { name: 'Initech', slug: `initech-${unique()}`, owner_uuid: ada.uuid })).body.id as string;
  expect((await byToken('/organizations/of', ada.token)).body.results.map((o: { id: string; active: boolean }) => [o.id, o.active])).toEqual([[id, false], [other, false]]);
  expect((await byToken('/organizations/switch', ada.token, { organization_id: other })).body.stat).toBe('ok');
  expect((await byToken('/organizations/of', ada.token)).body.results.map((o: { id: string; active: boolean }) => [o.id, o.active])).toEqual([[other, true], [id, false]]);
  expect((await byToken('/organizations/switch', stranger.token, { organization_id: other })).body).toMatchObject({ stat: 'error', code: 403 });

  // an owner changes the name, not what the application keeps; an admin never changes an owner's roles
  expect((await byToken('/organizations/update', ada.token, { organization_id: id, name: 'Globex Corp' })).body.result.name).toBe('Globex Corp');
  expect((await byToken('/organizations/update', ada.token, { organization_id: id, metadata: '{"plan":"free"}' })).body).toMatchObject({ stat: 'error', code: 403 });
  expect((await byToken('/organizations/update', ada.token, { organization_id: id, join_by_domain: 'true' })).body).toMatchObject({ stat: 'error', code: 403 });
  expect((await byToken('/organizations/update', admin.token, { organization_id: id, name: 'Mine' })).body).toMatchObject({ stat: 'error', code: 403 });
  expect((await byToken('/organizations/members/set_roles', admin.token, { organization_id: id, uuid: ada.uuid, roles: 'owner,member' })).body).toMatchObject({ stat: 'error', code: 403 });
  // a token reads its own organizations only, and learns nothing of who has an account
  expect((await byToken('/organizations/of', member.token, { uuid: ada.uuid })).body).toMatchObject({ stat: 'error', code: 403 });
  const own = (await byToken('/organizations/of', member.token)).body.results[0];
  expect(own).toMatchObject({ id, roles: ['member'] });
  expect(own).not.toHaveProperty('metadata');
  const nobody = await byToken('/organizations/members/set_roles', admin.token, { organization_id: id, key_attribute: 'email', key_value: JSON.stringify('nobody@nowhere.example'), roles: 'member' });
  const stranger2 = await byToken('/organizations/members/set_roles', admin.token, { organization_id: id, uuid: stranger.uuid, roles: 'member' });
  expect([nobody.body.code, nobody.body.error_description]).toEqual([stranger2.body.code, stranger2.body.error_description]);

  // the member leaves with its own token (naming itself, or naming no one)
  expect((await byToken('/organizations/members/remove', member.token, { organization_id: id })).body.stat).toBe('ok');
  // the last owner cannot leave
  expect((await byToken('/organizations/members/remove', ada.token, { organization_id: id })).body).toMatchObject({ stat: 'error', code: 200, argument_name: 'uuid' });
});

it('an invitation is accepted once, by its address only (verifying it), not once revoked or expired', async () => {
  const ada = await register(`ada-${unique()}@acme.example`);
  const id = (await byBackend('/organizations/create', { name: 'Hooli', slug: `hooli-${unique()}`, owner_uuid: ada.uuid })).body.id as string;
  const invitee = `grace-${unique()}@partner.example`;
  await byBackend('/organizations/invitations/create', { organization_id: id, email: invitee, roles: '["admin"]' });
  const token = linkIn((await mailsTo(invitee))[0]).searchParams.get('token')!;

  const wrong = await register(`other-${unique()}@partner.example`);
  expect((await byToken('/organizations/invitations/accept', wrong.token, { token })).body).toMatchObject({ stat: 'error', code: 200, argument_name: 'token' });
  // the invitee registers (unverified), accepts: a member with the roles given, its address verified
  const grace = await register(invitee);
  expect((await byToken('/organizations/invitations/accept', grace.token, { token })).body).toEqual({ stat: 'ok', organization_id: id, roles: ['admin'] });
  const record = (await post('/entity', { type_name: 'user', uuid: grace.uuid }, owner)).body.result;
  expect(record.emailVerified).not.toBeNull();
  expect((await byToken('/organizations/invitations/accept', grace.token, { token })).body).toMatchObject({ stat: 'error', argument_name: 'token', error_description: expect.stringContaining('used already') });
  expect((await byToken('/organizations/invitations/accept', grace.token, { token: 'x'.repeat(43) })).body).toMatchObject({ stat: 'error', argument_name: 'token' });
  expect((await byBackend('/organizations/invitations/accept', { token })).body).toMatchObject({ stat: 'error' });

  const listed = await byBackend('/organizations/invitations/list', { organization_id: id });
  expect(listed.body.results[0]).toMatchObject({ email: invitee, state: 'accepted' });

  // revoked, then expired
  const revokedTo = `rev-${unique()}@partner.example`;
  const revoked = (await byBackend('/organizations/invitations/create', { organization_id: id, email: revokedTo })).body.id as string;
  expect((await byBackend('/organizations/invitations/revoke', { organization_id: id, invitation_id: revoked })).body.stat).toBe('ok');
  expect((await byBackend('/organizations/invitations/revoke', { organization_id: id, invitation_id: revoked })).body).toMatchObject({ stat: 'error', argument_name: 'invitation_id' });
  const revokedToken = linkIn((await mailsTo(revokedTo))[0]).searchParams.get('token')!;
  const revokedAccount = await register(revokedTo);
  expect((await byToken('/organizations/invitations/accept', revokedAccount.token, { token: revokedToken })).body.error_description).toContain('revoked');

  const lateTo = `late-${unique()}@partner.example`;
  await byBackend('/organizations/invitations/create', { organization_id: id, email: lateTo });
  const lateToken = linkIn((await mailsTo(lateTo))[0]).searchParams.get('token')!;
  const late = await register(lateTo);
  clock.advance(7 * 86_400_000 + 1000);
  expect((await byToken('/organizations/invitations/accept', late.token, { token: lateToken })).body.error_description).toContain('expired');
});

it('20 parallel acceptances of one invitation make one membership; 20 parallel removals of the two last owners leave one', async () => {
  const ada = await register(`ada-${unique()}@acme.example`);
  const id = (await byBackend('/organizations/create', { name: 'Umbrella', slug: `umbrella-${unique()}`, owner_uuid: ada.uuid })).body.id as string;
  const invitee = `race-${unique()}@partner.example`;
  await byBackend('/organizations/invitations/create', { organization_id: id, email: invitee, roles: 'owner' });
  const token = linkIn((await mailsTo(invitee))[0]).searchParams.get('token')!;
  const grace = await register(invitee);
  const accepted = await Promise.all(Array.from({ length: 20 }, () => byToken('/organizations/invitations/accept', grace.token, { token })));
  expect(accepted.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
  expect(accepted.every((r) => r.status < 500)).toBe(true);
  const members = (await byBackend('/organizations/members/list', { organization_id: id })).body.results;
  expect(members.map((m: { roles: string[] }) => m.roles)).toEqual([['owner'], ['owner']]);

  const removals = await Promise.all(Array.from({ length: 20 }, (_, i) => byBackend('/organizations/members/remove', { organization_id: id, uuid: i % 2 === 0 ? ada.uuid : grace.uuid })));
  expect(removals.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
  expect(removals.every((r) => r.status < 500)).toBe(true);
  expect((await byBackend('/organizations/members/list', { organization_id: id })).body.results).toHaveLength(1);
});

it('just in time: a verified address at a verified domain of an organization that lets accounts join joins it as it signs in; an unverified one does not', async () => {
  const domain = `${unique()}.example`;
  const made = await byBackend('/organizations/create', { name: 'Stark', slug: `stark-${unique()}`, join_by_domain: 'true', default_roles: 'member' });
  const id = made.body.id as string;
  expect((await byBackend('/organizations/domains/add', { organization_id: id, domain })).body.result).toMatchObject({ domain, verified: false });
  const tony = await register(`tony@${domain}`);
  await verified(tony.uuid);
  await signIn(`tony@${domain}`);
  expect((await byBackend('/organizations/of', { uuid: tony.uuid })).body.results).toEqual([]); // the claim is not verified yet
  expect((await byBackend('/organizations/domains/verify', { organization_id: id, domain })).body.stat).toBe('ok');
  await signIn(`tony@${domain}`);
  expect((await byBackend('/organizations/of', { uuid: tony.uuid })).body.results).toEqual([expect.objectContaining({ id, roles: ['member'] })]);
  expect((await byBackend('/organizations/members/list', { organization_id: id })).body.results[0]).toMatchObject({ user_id: tony.uuid, joined_by: 'domain' });
  // removed, the domain does not bring the account back; invited, it joins again
  const happy = await register(`happy@${domain}`);
  await verified(happy.uuid);
  await signIn(`happy@${domain}`);
  expect((await byBackend('/organizations/members/remove', { organization_id: id, uuid: happy.uuid })).body.stat).toBe('ok');
  await signIn(`happy@${domain}`);
  expect((await byBackend('/organizations/of', { uuid: happy.uuid })).body.results).toEqual([]);
  expect((await byBackend('/organizations/members/add', { organization_id: id, uuid: happy.uuid, roles: 'member' })).body.stat).toBe('ok');
  // an unverified address at the domain joins nothing
  const pepper = await register(`pepper@${domain}`);
  await signIn(`pepper@${domain}`);
  expect((await byBackend('/organizations/of', { uuid: pepper.uuid })).body.results).toEqual([]);
  // an owner's own verified address at a domain verifies its claim; an unverified one's does not
  const other = `${unique()}.example`;
  await byBackend('/organizations/members/set_roles', { organization_id: id, uuid: tony.uuid, roles: 'owner' }).then((r) => expect(r.body).toMatchObject({ stat: 'ok' }));
  const tonyToken = await signIn(`tony@${domain}`);
  expect((await byToken('/organizations/domains/add', tonyToken, { organization_id: id, domain: other })).body.result.verified).toBe(false);
  expect((await byToken('/organizations/domains/add', tonyToken, { organization_id: id, domain: `sub.${domain}` })).body.result.verified).toBe(false);
  expect((await byToken('/organizations/domains/verify', tonyToken, { organization_id: id, domain: other })).body).toMatchObject({ stat: 'error', argument_name: 'domain' });
  expect((await byBackend('/organizations/domains/list', { organization_id: id })).body.results.map((d: { domain: string; verified: boolean }) => [d.domain, d.verified]))
    .toEqual([[domain, true], [other, false], [`sub.${domain}`, false]].sort((a, b) => String(a[0]).localeCompare(String(b[0]))));
});

it('a member cannot make strangers join: its own claims take nobody in until the application says so, and a mail provider is never joinable', async () => {
  const owner = await register(`owner-${unique()}@gmail.com`);
  await verified(owner.uuid);
  const made = await byBackend('/organizations/create', { name: 'Webmail Inc', slug: `webmail-${unique()}`, join_by_domain: 'true', default_roles: 'member', owner_uuid: owner.uuid });
  const id = made.body.id as string;
  const token = await signIn(owner.email);
  // the owner's own verified address at gmail.com verifies its claim at once, but makes nobody join
  expect((await byToken('/organizations/domains/add', token, { organization_id: id, domain: 'gmail.com', verified: 'true' })).body.result).toMatchObject({ domain: 'gmail.com', verified: true, verified_by: 'member', joinable: false });
  const stranger = await register(`stranger-${unique()}@gmail.com`);
  await verified(stranger.uuid);
  await signIn(stranger.email);
  expect((await byBackend('/organizations/of', { uuid: stranger.uuid })).body.results).toEqual([]);
  // only the application decides; and never for a mail provider anyone can use
  expect((await byToken('/organizations/domains/set_joinable', token, { organization_id: id, domain: 'gmail.com', joinable: 'true' })).body)
    .toMatchObject({ stat: 'error', code: 403, error_description: expect.stringContaining('only the application') });
  expect((await byBackend('/organizations/domains/set_joinable', { organization_id: id, domain: 'gmail.com', joinable: 'true' })).body)
    .toMatchObject({ stat: 'error', code: 200, argument_name: 'domain', error_description: expect.stringContaining('mail provider') });
  expect((await byBackend('/organizations/domains/add', { organization_id: id, domain: 'outlook.com', verified: 'true', joinable: 'true' })).body)
    .toMatchObject({ stat: 'error', code: 200, argument_name: 'domain' });
  expect((await byBackend('/organizations/domains/set_joinable', { organization_id: id, domain: 'gmail.com' })).body).toMatchObject({ stat: 'error', code: 100, argument_name: 'joinable' });
  await signIn(stranger.email);
  expect((await byBackend('/organizations/of', { uuid: stranger.uuid })).body.results).toEqual([]);

  // a company's own domain, verified by a member: joinable once the application says so, and no longer when it takes it back
  const corp = `${unique()}.example`;
  const boss = await register(`boss@${corp}`);
  await verified(boss.uuid);
  expect((await byBackend('/organizations/members/add', { organization_id: id, uuid: boss.uuid, roles: 'owner' })).body.stat).toBe('ok');
  const bossToken = await signIn(`boss@${corp}`);
  expect((await byToken('/organizations/domains/add', bossToken, { organization_id: id, domain: corp })).body.result).toMatchObject({ verified: true, joinable: false });
  const worker = await register(`worker@${corp}`);
  await verified(worker.uuid);
  await signIn(`worker@${corp}`);
  expect((await byBackend('/organizations/of', { uuid: worker.uuid })).body.results).toEqual([]);
  expect((await byBackend('/organizations/domains/set_joinable', { organization_id: id, domain: corp, joinable: 'true' })).body.stat).toBe('ok');
  await signIn(`worker@${corp}`);
  expect((await byBackend('/organizations/of', { uuid: worker.uuid })).body.results).toEqual([expect.objectContaining({ id, roles: ['member'] })]);
  expect((await byBackend('/organizations/domains/set_joinable', { organization_id: id, domain: corp, joinable: 'false' })).body.stat).toBe('ok');
  const late = await register(`late@${corp}`);
  await verified(late.uuid);
  await signIn(`late@${corp}`);
  expect((await byBackend('/organizations/of', { uuid: late.uuid })).body.results).toEqual([]);
  expect((await byBackend('/organizations/domains/list', { organization_id: id })).body.results.map((d: { domain: string; joinable: boolean }) => [d.domain, d.joinable]))
    .toEqual([[corp, false], ['gmail.com', false]].sort((a, b) => String(a[0]).localeCompare(String(b[0]))));
});

it('refuses what it cannot use, naming the argument', async () => {
  const ada = await register(`ada-${unique()}@acme.example`);
  const slug = `taken-${unique()}`;
  const id = (await byBackend('/organizations/create', { name: 'Taken', slug, owner_uuid: ada.uuid })).body.id as string;
  const cases: [string, Record<string, string>, string, number?][] = [
    ['/organizations/create', { slug: `a-${unique()}` }, 'name', 100],
    ['/organizations/create', { name: 'A' }, 'slug', 100],
    ['/organizations/create', { name: 'A', slug }, 'slug'],
    ['/organizations/create', { name: 'A', slug: 'Not A Slug' }, 'slug'],
    ['/organizations/create', { name: 'A', slug: `b-${unique()}`, metadata: '[1]' }, 'metadata'],
    ['/organizations/create', { name: 'A', slug: `b-${unique()}`, metadata: JSON.stringify({ x: 'y'.repeat(5000) }) }, 'metadata'],
    ['/organizations/create', { name: 'A', slug: `b-${unique()}`, logo_url: 'http://cdn.example.com/a.png' }, 'logo_url'],
    ['/organizations/create', { name: 'A', slug: `b-${unique()}`, default_roles: 'chief' }, 'default_roles'],
    ['/organizations/create', { name: 'A', slug: `b-${unique()}`, owner_uuid: 'nobody' }, 'owner_uuid'],
    ['/organizations/create', { name: 'A', slug: `b-${unique()}`, join_by_domain: 'yes' }, 'join_by_domain'],
    ['/organizations/get', { organization_id: 'org_000000000000000000000000' }, 'organization_id'],
    ['/organizations/get', {}, 'organization_id'],
    ['/organizations/update', { organization_id: 'nope', name: 'x' }, 'organization_id'],
    ['/organizations/list', { max_results: '0' }, 'max_results'],
    ['/organizations/list', { cursor: 'abc' }, 'cursor'],
    ['/organizations/members/add', { organization_id: id, uuid: ada.uuid, roles: 'member' }, 'uuid'],
    ['/organizations/members/add', { organization_id: id, uuid: ada.uuid, roles: 'chief' }, 'roles'],
    ['/organizations/members/add', { organization_id: id, uuid: ada.uuid, roles: '[' }, 'roles'],
    ['/organizations/members/add', { organization_id: id, uuid: ada.uuid, roles: '[]' }, 'roles'],
    ['/organizations/members/set_roles', { organization_id: id, uuid: ada.uuid, roles: 'member' }, 'roles'],
    ['/organizations/members/remove', { organization_id: id, uuid: ada.uuid }, 'uuid'],
    ['/organizations/invitations/create', { organization_id: id, email: 'not an address' }, 'email'],
    ['/organizations/invitations/create', { organization_id: id, email: ada.uuid }, 'email'],
    ['/organizations/invitations/create', { organization_id: id, email: 'z@x.example', locale: 'french!' }, 'locale'],
    ['/organizations/invitations/revoke', { organization_id: id, invitation_id: 'inv_nope' }, 'invitation_id'],
    ['/organizations/roles/define', { name: 'Bad Name' }, 'name'],
    ['/organizations/roles/define', { name: 'ok', permissions: 'Read Invoices' }, 'permissions'],
    ['/organizations/roles/remove', { name: 'owner' }, 'name'],
    ['/organizations/roles/remove', { name: 'never_defined' }, 'name'],
    ['/organizations/domains/add', { organization_id: id, domain: 'localhost' }, 'domain'],
    ['/organizations/domains/remove', { organization_id: id, domain: 'never.example' }, 'domain'],
  ];
  for (const [path, params, argument, code] of cases) {
    const r = await byBackend(path, params);
    expect([path, r.body.stat, r.body.argument_name]).toEqual([path, 'error', argument]);
    expect(r.body).toMatchObject({ code: code ?? 200, request_id: expect.any(String), error_description: expect.any(String) });
  }
  // the address of a member already
  const adaEmail = (await post('/entity', { type_name: 'user', uuid: ada.uuid }, owner)).body.result.email as string;
  expect((await byBackend('/organizations/invitations/create', { organization_id: id, email: adaEmail })).body).toMatchObject({ stat: 'error', argument_name: 'email' });
  // a login client is no backend
  const login = basic(t.local.clients.login.client_id, t.local.clients.login.client_secret);
  expect((await post('/organizations/list', {}, login)).body).toMatchObject({ stat: 'error', code: 403 });
  // an access token does not make organizations
  expect((await post('/organizations/create', { name: 'Mine', slug: `mine-${unique()}` }, bearer(ada.token))).body).toMatchObject({ stat: 'error' });
});

it('limits invitations per organization per hour, and members per organization (settings)', async () => {
  const ada = await register(`ada-${unique()}@acme.example`);
  const id = (await byBackend('/organizations/create', { name: 'Small', slug: `small-${unique()}`, owner_uuid: ada.uuid })).body.id as string;
  expect((await byBackend('/settings/set_default', { key: 'organization_invitations_per_hour', value: '3' })).body.stat).toBe('ok');
  expect((await byBackend('/settings/set_default', { key: 'organization_max_members', value: '2' })).body.stat).toBe('ok');
  try {
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => byBackend('/organizations/invitations/create', { organization_id: id, email: `lim${i}-${unique()}@partner.example` })));
    expect(answers.filter((r) => r.body.stat === 'ok')).toHaveLength(3);
    expect(answers.find((r) => r.body.stat === 'error')!.body).toMatchObject({ code: 510, retry_after: expect.any(Number) });
    const accounts = await Promise.all([register(`m1-${unique()}@acme.example`), register(`m2-${unique()}@acme.example`), register(`m3-${unique()}@acme.example`)]);
    const added = await Promise.all(accounts.map((a) => byBackend('/organizations/members/add', { organization_id: id, uuid: a.uuid, roles: 'member' })));
    expect(added.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
    expect((await byBackend('/settings/set_default', { key: 'organization_max_members', value: 'lots' })).body).toMatchObject({ stat: 'error', argument_name: 'value' });
  } finally {
    await byBackend('/settings/set_default', { key: 'organization_invitations_per_hour', value: '100' });
    await byBackend('/settings/set_default', { key: 'organization_max_members', value: '1000' });
  }
});
