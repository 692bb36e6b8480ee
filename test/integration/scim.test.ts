import SCIMMY from 'scimmy';
import request from 'supertest';
import { manualClock } from '../helpers/backend';
import { servedTestApp } from '../helpers/browser';
import { APP, oidcSignIn, PASSWORD } from '../helpers/oidc-sign-in';

// docs/scim.md through the front door: a SCIM client (plain HTTP, as a directory speaks it) drives
// an organization's SCIM service with the bodies Okta and Entra ID send; every resource it gets back
// is read by SCIMMY, an independent implementation of RFC 7643, against the core schemas. The
// provisioned people are accounts that sign in, through the API and through openid-client, and a
// deactivation ends all of it within the request.

const clock = manualClock();
let served: Awaited<ReturnType<typeof servedTestApp>>;
let s: ReturnType<typeof oidcSignIn>;
const SCIM_TYPE = 'application/scim+json';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

interface Answer { status: number; headers: Headers; body: any }

/** A SCIM client: the organization's token, JSON bodies, the answers as they came. */
function client(token: string) {
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await fetch(`${served.base}/scim/v2${path}`, {
      method, headers: { authorization: `Bearer ${token}`, accept: SCIM_TYPE, ...(body !== undefined && { 'content-type': SCIM_TYPE }), ...headers },
      ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
  };
}

/** A User as SCIMMY reads it against the core and enterprise schemas (it throws on a value of the wrong type). */
const readUser = (resource: Record<string, unknown>) => new SCIMMY.Schemas.User(resource, 'out');
const readGroup = (resource: Record<string, unknown>) => new SCIMMY.Schemas.Group(resource, 'out');

const unique = () => Math.random().toString(36).slice(2, 10);

interface Org { id: string; domain: string; token: string; scim: ReturnType<typeof client> }

async function organization(): Promise<Org> {
  const domain = `scim-${unique()}.example`;
  const created = await s.admin('/organizations/create', { name: `Org ${domain}`, slug: domain.replace(/\./g, '-') });
  const id = created.body.id as string;
  expect((await s.admin('/organizations/domains/add', { organization_id: id, domain, verified: 'true' })).body.stat).toBe('ok');
  const made = await s.admin('/organizations/scim/tokens/create', { organization_id: id, description: 'Okta' });
  expect(made.body).toMatchObject({ stat: 'ok', token: expect.stringMatching(/^ghscim_/), scim_url: expect.stringMatching(/\/scim\/v2$/), result: { description: 'Okta', revoked: null } });
  return { id, domain, token: made.body.token, scim: client(made.body.token) };
}

/** The body Okta sends to make a user (its lookup by userName comes first). */
const oktaUser = (email: string, extra: Record<string, unknown> = {}) => ({
  schemas: [USER], userName: email, name: { givenName: 'Isabelle', familyName: 'Dupont' }, emails: [{ primary: true, value: email, type: 'work' }],
  displayName: 'Isabelle Dupont', locale: 'en-US', externalId: `00u${unique()}`, groups: [], active: true, ...extra,
});

beforeAll(async () => {
  served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900', LOGIN_LIMIT_ACCOUNT: '1000/600' } });
  s = oidcSignIn(served, clock);
  for (const [key, value] of [['grant_types', 'authorization_code refresh_token'], ['redirect_uris', APP]]) {
    expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key, value })).body.stat).toBe('ok');
  }
  clock.advance(5_100);
}, 60_000);
afterAll(() => served?.close());

it('answers what it is: ServiceProviderConfig, ResourceTypes and Schemas read by SCIMMY; writes to them 405; an unknown path 404; no token 401; all as SCIM', async () => {
  const { scim, token } = await organization();
  const config = await scim('GET', '/ServiceProviderConfig');
  expect(config.status).toBe(200);
  expect(config.headers.get('content-type')).toContain(SCIM_TYPE);
  expect(config.body).toMatchObject({ patch: { supported: true }, filter: { supported: true }, etag: { supported: true }, bulk: { supported: false } });
  new SCIMMY.Schemas.ServiceProviderConfig(config.body, 'out');
  const types = await scim('GET', '/ResourceTypes');
  expect(types.body.Resources.map((r: { id: string }) => r.id)).toEqual(['User', 'Group']);
  expect((await scim('GET', '/ResourceTypes/User')).body.schemaExtensions).toEqual([{ schema: ENTERPRISE, required: false }]);
  const schemas = await scim('GET', '/Schemas');
  expect(schemas.body.Resources.map((r: { id: string }) => r.id)).toEqual([USER, GROUP, ENTERPRISE]);
  const userSchema = (await scim('GET', `/Schemas/${USER}`)).body;
  expect(userSchema.attributes.find((a: { name: string }) => a.name === 'userName')).toMatchObject({ required: true, uniqueness: 'server', type: 'string' });
  expect(userSchema.attributes.find((a: { name: string }) => a.name === 'password')).toMatchObject({ returned: 'never', mutability: 'writeOnly' });

  for (const [method, path] of [['POST', '/Schemas'], ['PUT', `/Schemas/${USER}`], ['DELETE', '/ResourceTypes/User'], ['PATCH', '/ServiceProviderConfig']]) {
    const refused = await scim(method, path, {});
    expect([path, refused.status, refused.body.schemas]).toEqual([path, 405, ['urn:ietf:params:scim:api:messages:2.0:Error']]);
    expect(refused.headers.get('allow')).toBe('GET');
  }
  const unknown = await scim('GET', '/Widgets');
  expect(unknown).toMatchObject({ status: 404, body: { status: '404', detail: expect.stringContaining('is not an endpoint of the SCIM service') } });
  expect((await scim('GET', '/Schemas/urn:nope')).status).toBe(404);
  expect((await scim('POST', '/Bulk', { Operations: [] })).status).toBe(501);

  // no token, a made-up one, a revoked one: 401 with a Bearer challenge, the same answer
  for (const bad of [client(''), client('ghscim_' + 'A'.repeat(43)), client('not a token')]) {
    const refused = await bad('GET', '/Users');
    expect(refused).toMatchObject({ status: 401, body: { status: '401', detail: expect.stringContaining('SCIM token') } });
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="scim"');
  }
  expect(JSON.stringify((await client('')('GET', '/Users')).body)).not.toContain(token);
});

it('provisions, finds, pages, replaces and patches users as Okta and Entra ID send them; ETags; uniqueness; password never returned', async () => {
  const { scim, domain, id: orgId } = await organization();
  // Okta: a lookup by userName first (none), then the create
  const email = `isabelle.dupont@${domain}`;
  const lookup = await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}&startIndex=1&count=100`);
  expect(lookup.body).toEqual({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });
  const created = await scim('POST', '/Users', oktaUser(email, { password: 'a long and unusual passphrase' }));
  expect(created.status).toBe(201);
  const user = created.body;
  readUser(user);
  expect(user).toMatchObject({ userName: email, active: true, name: { givenName: 'Isabelle', familyName: 'Dupont' }, groups: [], meta: { resourceType: 'User', version: 'W/"1"' } });
  expect(user).not.toHaveProperty('password');
  expect(created.headers.get('location')).toBe(user.meta.location);
  expect(created.headers.get('etag')).toBe('W/"1"');
  expect(new URL(user.meta.location).pathname).toBe(`/scim/v2/Users/${user.id}`);

  // the account: verified, a member with the default roles, signs in with the directory's password
  const account = await s.admin('/entity', { type_name: 'user', uuid: user.id });
  expect(account.body.result).toMatchObject({ email, givenName: 'Isabelle', familyName: 'Dupont' });
  expect(account.body.result.emailVerified).not.toBeNull();
  expect((await s.admin('/organizations/of', { uuid: user.id })).body.results).toEqual([expect.objectContaining({ id: orgId, roles: ['member'] })]);
  const signedIn = await request(served.t.app).post('/oauth/auth_native_traditional').type('form')
    .send({ client_id: s.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: 'a long and unusual passphrase' });
  expect(signedIn.body.stat).toBe('ok');

  // uniqueness: the same userName in another case, and the same address under another name
  const again = await scim('POST', '/Users', oktaUser(email.toUpperCase()));
  expect(again).toMatchObject({ status: 409, body: { scimType: 'uniqueness' } });
  const sameAddress = await scim('POST', '/Users', oktaUser(email, { userName: `other-${unique()}` }));
  expect(sameAddress).toMatchObject({ status: 409, body: { scimType: 'uniqueness', detail: expect.stringContaining('provisioned already') } });

  // Entra ID: its create (the enterprise extension, meta it should not send), its filters
  const entraName = `Test_User_${unique()}`;
  const entra = await scim('POST', '/Users', {
    schemas: [USER, ENTERPRISE], externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef', userName: entraName, active: true,
    emails: [{ primary: true, type: 'work', value: `${entraName}@${domain}` }], meta: { resourceType: 'User' },
    name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' }, roles: [],
    [ENTERPRISE]: { department: 'Research', employeeNumber: '701984', manager: { value: user.id } },
  });
  expect(entra.status).toBe(201);
  readUser(entra.body);
  expect(entra.body.schemas).toEqual([USER, ENTERPRISE]);
  expect(entra.body[ENTERPRISE]).toEqual({ department: 'Research', employeeNumber: '701984', manager: { value: user.id } });

  const find = async (filter: string, extra = '') => (await scim('GET', `/Users?filter=${encodeURIComponent(filter)}${extra}`)).body;
  expect((await find(`userName eq "${entraName.toLowerCase()}"`)).Resources.map((r: { id: string }) => r.id)).toEqual([entra.body.id]);
  expect((await find('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')).totalResults).toBe(1);
  expect((await find(`emails.value eq "${email.toUpperCase()}"`)).Resources[0].id).toBe(user.id);
  // any of a User's addresses, not only the account's
  const withHome = await scim('PATCH', `/Users/${entra.body.id}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'emails', value: [{ value: `home-${entraName}@elsewhere.example`, type: 'home' }] }] });
  expect(withHome.status).toBe(200);
  expect((await find(`emails.value eq "HOME-${entraName}@elsewhere.example"`)).Resources.map((r: { id: string }) => r.id)).toEqual([entra.body.id]);
  expect((await find('title ne null')).totalResults).toBe(0);
  // (a time in another form is the same time; the test's clock made both at one instant)
  expect((await find(`meta.created eq "${user.meta.created.replace('Z', '+00:00')}"`)).Resources.map((r: { id: string }) => r.id)).toContain(user.id);
  expect((await find(`emails[type eq "work" and value co "isabelle"]`)).totalResults).toBe(1);
  expect((await find('active eq true')).totalResults).toBe(2);
  expect((await find(`userName sw "test_user" or name.givenName eq "Isabelle"`)).totalResults).toBe(2);
  expect((await find(`not (userName sw "test_user") and ${ENTERPRISE}:department pr`)).totalResults).toBe(0);
  expect((await find(`${ENTERPRISE}:department eq "research"`)).Resources[0].id).toBe(entra.body.id);
  expect((await find(`meta.created gt "2000-01-01T00:00:00Z"`)).totalResults).toBe(2);
  for (const bad of ['userName eq', 'userName xx "a"', '(userName eq "a"', 'userName eq "a" and', 'emails[type eq "work"', 'userName eq "unterminated', 'active gt true']) {
    const refused = await scim('GET', `/Users?filter=${encodeURIComponent(bad)}`);
    expect([bad, refused.status, refused.body.scimType]).toEqual([bad, 400, 'invalidFilter']);
  }

  // attributes and excludedAttributes; .search
  const only = (await scim('GET', `/Users/${user.id}?attributes=userName,name.givenName`)).body;
  expect(only).toEqual({ schemas: [USER], id: user.id, userName: email, name: { givenName: 'Isabelle' } });
  const without = (await scim('GET', `/Users/${user.id}?excludedAttributes=groups,emails,name`)).body;
  expect(without).not.toHaveProperty('emails');
  expect(without).toHaveProperty('userName', email);
  const searched = await scim('POST', '/Users/.search', {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'], filter: `userName eq "${email}"`, attributes: ['userName'], startIndex: 1, count: 10,
  });
  expect(searched.body.Resources).toEqual([{ schemas: [USER], id: user.id, userName: email }]);

  // ETags: If-None-Match → 304; a stale If-Match → 412
  expect((await scim('GET', `/Users/${user.id}`, undefined, { 'if-none-match': 'W/"1"' })).status).toBe(304);
  // Entra ID's patch: Replace in capitals, a value filter on emails, a sub-attribute, a boolean as a string
  const newEmail = `isabelle.martin@${domain}`;
  const patched = await scim('PATCH', `/Users/${user.id}`, {
    schemas: [PATCH], Operations: [
      { op: 'Replace', path: 'emails[type eq "work"].value', value: newEmail },
      { op: 'Replace', path: 'name.familyName', value: 'Martin' },
      { op: 'Add', path: `${ENTERPRISE}:manager`, value: entra.body.id },
      { op: 'add', value: { nickName: 'Isa', 'name.middleName': 'Marie', [ENTERPRISE]: { costCenter: 'CC-7' } } },
      { op: 'Replace', path: 'active', value: 'True' },
    ],
  }, { 'if-match': 'W/"1"' });
  expect(patched.status).toBe(200);
  readUser(patched.body);
  expect(patched.body).toMatchObject({
    emails: [{ primary: true, value: newEmail, type: 'work' }], name: { givenName: 'Isabelle', familyName: 'Martin', middleName: 'Marie' }, nickName: 'Isa',
    [ENTERPRISE]: { manager: { value: entra.body.id }, costCenter: 'CC-7' }, meta: { version: 'W/"2"' },
  });
  // the account follows: its new address verified, its name
  expect((await s.admin('/entity', { type_name: 'user', uuid: user.id })).body.result).toMatchObject({ email: newEmail, familyName: 'Martin' });
  const stale = await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'title', value: 'CTO' }] }, { 'if-match': 'W/"1"' });
  expect(stale.status).toBe(412);

  // remove: a sub-attribute, the values a filter selects, an extension's attribute; a path that names nothing
  const removed = await scim('PATCH', `/Users/${user.id}`, {
    schemas: [PATCH], Operations: [
      { op: 'remove', path: 'name.middleName' }, { op: 'remove', path: 'emails[type eq "work"]' }, { op: 'remove', path: `${ENTERPRISE}:costCenter` },
      { op: 'add', path: 'emails', value: [{ value: newEmail, type: 'home', primary: true }] },
      { op: 'add', path: 'phoneNumbers[type eq "mobile"].value', value: '+33 6 12 34 56 78' },
    ],
  });
  expect(removed.status).toBe(200);
  expect(removed.body).toMatchObject({ emails: [{ value: newEmail, type: 'home', primary: true }], phoneNumbers: [{ type: 'mobile', value: '+33 6 12 34 56 78' }] });
  expect(removed.body.name).not.toHaveProperty('middleName');
  expect(removed.body[ENTERPRISE]).not.toHaveProperty('costCenter');
  for (const [operation, scimType] of [
    [{ op: 'replace', path: 'nonsense', value: 1 }, 'invalidPath'], [{ op: 'replace', path: 'emails[type eq', value: 1 }, 'invalidPath'],
    [{ op: 'remove' }, 'noTarget'], [{ op: 'move', path: 'title', value: 'x' }, 'invalidSyntax'], [{ op: 'replace', path: 'id', value: 'x' }, 'mutability'],
    [{ op: 'replace', path: 'active', value: 'maybe' }, 'invalidValue'], [{ op: 'replace', path: 'emails[type eq "work" or type eq "home"].display', value: 'x' }, undefined],
  ] as const) {
    const refused = await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [operation] });
    if (scimType === undefined) expect(refused.status).toBe(200);
    else expect([operation, refused.status, refused.body.scimType]).toEqual([operation, 400, scimType]);
  }
  expect((await scim('PATCH', `/Users/${user.id}`, { Operations: [] })).body.scimType).toBe('invalidSyntax');

  // PUT: what it does not say is gone; a userName taken by another → 409
  const put = await scim('PUT', `/Users/${user.id}`, { schemas: [USER], userName: email, emails: [{ value: newEmail, type: 'work', primary: true }], active: true });
  expect(put.status).toBe(200);
  expect(put.body).not.toHaveProperty('name');
  expect(put.body).not.toHaveProperty('nickName');
  expect((await scim('PUT', `/Users/${user.id}`, { schemas: [USER], userName: entraName.toUpperCase(), emails: [{ value: newEmail }] })).body.scimType).toBe('uniqueness');
  expect((await scim('PUT', `/Users/${user.id}`, { schemas: [USER], emails: [{ value: newEmail }] })).body.scimType).toBe('invalidValue');
  const renamedOnto = await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'userName', value: entraName.toLowerCase() }] });
  expect(renamedOnto).toMatchObject({ status: 409, body: { scimType: 'uniqueness' } });

  // bad bodies: not JSON, not SCIM's type, no address, an address outside the verified domains
  expect((await scim('POST', '/Users', '{"userName":')).body).toMatchObject({ status: '400', scimType: 'invalidSyntax' });
  expect((await scim('POST', '/Users', JSON.stringify({ schemas: [USER], userName: 'x'.repeat(3 * 1024 * 1024) }))).body).toMatchObject({ status: '413' });
  const textBody = await fetch(`${served.base}/scim/v2/Users`, { method: 'POST', headers: { authorization: `Bearer ${(await organization()).token}`, 'content-type': 'text/plain' }, body: 'x' });
  expect(textBody.status).toBe(415);
  expect((await scim('POST', '/Users', { schemas: [USER], userName: 'nobody' })).body).toMatchObject({ scimType: 'invalidValue', detail: expect.stringContaining('no email address') });
  const elsewhere = await scim('POST', '/Users', oktaUser(`someone@gmail.com`));
  expect(elsewhere.body).toMatchObject({ scimType: 'invalidValue', detail: expect.stringContaining(domain) });
  expect((await scim('GET', '/Users/not-an-id')).status).toBe(404);
});

it('pages through users with startIndex and count; 20 parallel creates of one userName make one', async () => {
  const { scim, domain } = await organization();
  const made = [];
  for (let i = 0; i < 7; i++) made.push((await scim('POST', '/Users', oktaUser(`p${i}@${domain}`))).body.id);
  const page = async (start: number, count: number) => (await scim('GET', `/Users?startIndex=${start}&count=${count}`)).body;
  expect(await page(1, 3)).toMatchObject({ totalResults: 7, startIndex: 1, itemsPerPage: 3 });
  const seen = [...(await page(1, 3)).Resources, ...(await page(4, 3)).Resources, ...(await page(7, 3)).Resources].map((r: { id: string }) => r.id);
  expect(seen).toEqual(made);
  expect((await page(8, 3)).Resources).toEqual([]);
  expect(await page(1, 0)).toMatchObject({ totalResults: 7, itemsPerPage: 0, Resources: [] });
  const filtered = (await scim('GET', `/Users?filter=${encodeURIComponent('userName sw "p"')}&startIndex=6&count=5`)).body;
  expect(filtered).toMatchObject({ totalResults: 7, startIndex: 6, itemsPerPage: 2 });
  expect((await scim('GET', '/Users?count=abc')).body.scimType).toBe('invalidValue');

  const name = `race@${domain}`;
  const answers = await Promise.all(Array.from({ length: 20 }, () => scim('POST', '/Users', oktaUser(name))));
  expect(answers.filter((a) => a.status !== 409 && a.status !== 201).map((a) => a.body)).toEqual([]);
  expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
  expect(answers.filter((a) => a.status === 409).every((a) => a.body.scimType === 'uniqueness')).toBe(true);
  expect(answers.filter((a) => a.status === 409)).toHaveLength(19);
  expect((await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${name}"`)}`)).body.totalResults).toBe(1);
  expect((await s.admin('/entity.count', { type_name: 'user', filter: `email = '${name}'` })).body.total_count).toBe(1);
});

it('groups with members give the organization\'s roles; Okta\'s and Entra ID\'s member patches; rename, replace, delete', async () => {
  const org = await organization();
  const { scim, domain } = org;
  expect((await s.admin('/organizations/scim/configure', { organization_id: org.id, group_roles: '{"Engineering Admins":["admin"],"Billing":["member"]}' })).body)
    .toMatchObject({ stat: 'ok', group_roles: { 'Engineering Admins': ['admin'], Billing: ['member'] } });
  const ada = (await scim('POST', '/Users', oktaUser(`ada@${domain}`))).body;
  const bob = (await scim('POST', '/Users', oktaUser(`bob@${domain}`))).body;
  const rolesOf = async (uuid: string) => (await s.admin('/organizations/of', { uuid })).body.results.find((m: { id: string }) => m.id === org.id)?.roles;

  // Okta: the group, then its members by a patch
  const group = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Engineering Admins', members: [] });
  expect(group.status).toBe(201);
  readGroup(group.body);
  const added = await scim('PATCH', `/Groups/${group.body.id}`, {
    schemas: [PATCH], Operations: [{ op: 'replace', value: { id: group.body.id, displayName: 'Engineering Admins' } }, { op: 'add', path: 'members', value: [{ value: ada.id, display: ada.userName }] }],
  });
  expect(added.status).toBe(200);
  readGroup(added.body);
  expect(added.body.members).toEqual([{ value: ada.id, $ref: expect.stringContaining(`/Users/${ada.id}`), display: ada.userName, type: 'User' }]);
  expect(await rolesOf(ada.id)).toEqual(['admin']);
  expect((await scim('GET', `/Users/${ada.id}`)).body.groups).toEqual([{ value: group.body.id, $ref: expect.stringContaining(`/Groups/${group.body.id}`), display: 'Engineering Admins' }]);
  expect((await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "engineering admins"')}&excludedAttributes=members`)).body.Resources)
    .toEqual([expect.not.objectContaining({ members: expect.anything() })]);
  expect((await scim('GET', `/Groups?filter=${encodeURIComponent(`members[value eq "${ada.id}"]`)}`)).body.totalResults).toBe(1);

  // Entra ID: Add and Remove naming members in the value; Okta: remove with a value filter
  await scim('PATCH', `/Groups/${group.body.id}`, { schemas: [PATCH], Operations: [{ op: 'Add', path: 'members', value: [{ value: bob.id }] }] });
  expect(await rolesOf(bob.id)).toEqual(['admin']);
  await scim('PATCH', `/Groups/${group.body.id}`, { schemas: [PATCH], Operations: [{ op: 'Remove', path: 'members', value: [{ value: bob.id }] }] });
  expect(await rolesOf(bob.id)).toEqual(['member']);
  await scim('PATCH', `/Groups/${group.body.id}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: `members[value eq "${ada.id}"]` }] });
  expect(await rolesOf(ada.id)).toEqual(['member']);
  const unknownMember = await scim('PATCH', `/Groups/${group.body.id}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: '00000000-0000-4000-8000-000000000000' }] }] });
  expect(unknownMember).toMatchObject({ status: 400, body: { scimType: 'invalidValue' } });

  // a member's version follows its groups
  const adaVersion = (await scim('GET', `/Users/${ada.id}`)).body.meta.version;
  await scim('PATCH', `/Groups/${group.body.id}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: ada.id }] }] });
  expect((await scim('GET', `/Users/${ada.id}`, undefined, { 'if-none-match': adaVersion })).status).toBe(200);
  await scim('PATCH', `/Groups/${group.body.id}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: `members[value eq "${ada.id}"]` }] });

  // PUT with members; a rename moves the roles; a duplicate name 409; delete takes the roles back
  const put = await scim('PUT', `/Groups/${group.body.id}`, { schemas: [GROUP], displayName: 'Engineering Admins', members: [{ value: ada.id }, { value: bob.id }] });
  expect(put.body.members.map((m: { value: string }) => m.value)).toEqual([ada.id, bob.id]);
  expect([await rolesOf(ada.id), await rolesOf(bob.id)]).toEqual([['admin'], ['admin']]);
  expect((await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'ENGINEERING ADMINS' })).body.scimType).toBe('uniqueness');
  const renamed = await scim('PATCH', `/Groups/${group.body.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'Engineers' }] }, { 'if-match': put.body.meta.version });
  expect(renamed.body.displayName).toBe('Engineers');
  expect(await rolesOf(ada.id)).toEqual(['member']);
  expect((await scim('DELETE', `/Groups/${group.body.id}`, undefined, { 'if-match': 'W/"1"' })).status).toBe(412);
  expect((await scim('DELETE', `/Groups/${group.body.id}`)).status).toBe(204);
  expect((await scim('GET', `/Groups/${group.body.id}`)).status).toBe(404);
  expect((await scim('GET', `/Users/${ada.id}`)).body.groups).toEqual([]);

  // a large group: more members than any other attribute has values
  const many = [];
  for (let i = 0; i < 60; i++) many.push((await scim('POST', '/Users', oktaUser(`many${i}@${domain}`))).body.id as string);
  const big = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Everyone', members: many.slice(0, 55).map((value) => ({ value })) });
  expect(big.status).toBe(201);
  const grown = await scim('PATCH', `/Groups/${big.body.id}?excludedAttributes=members`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: many.slice(55).map((value) => ({ value })) }] });
  expect(grown.status).toBe(200);
  expect(grown.body).not.toHaveProperty('members');
  expect((await scim('GET', `/Groups/${big.body.id}`)).body.members).toHaveLength(60);
  // a mapping made afterwards gives its roles at once
  expect((await s.admin('/organizations/scim/configure', { organization_id: org.id, group_roles: '{"everyone":["admin"]}' })).body.stat).toBe('ok');
  expect(await rolesOf(many[59])).toEqual(['admin']);
  expect(await rolesOf(ada.id)).toEqual(['member']);

  // another organization's token reaches none of it
  const other = await organization();
  expect((await other.scim('GET', `/Users/${ada.id}`)).status).toBe(404);
  expect((await other.scim('GET', '/Users')).body.totalResults).toBe(0);
  expect((await other.scim('DELETE', `/Users/${ada.id}`)).status).toBe(404);
});

it('deactivating ends the person\'s session, refresh token and OpenID grant within the request; reactivating lets them back; delete and re-provision', async () => {
  const org = await organization();
  const { scim, domain } = org;
  const email = `grace@${domain}`;
  const user = (await scim('POST', '/Users', oktaUser(email, { password: PASSWORD }))).body;
  // a session of the API: its access and refresh tokens
  const signedIn = await request(served.t.app).post('/oauth/auth_native_traditional').type('form')
    .send({ client_id: s.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD });
  expect(signedIn.body.stat).toBe('ok');
  // an OpenID grant with its refresh token, through openid-client
  const config = await s.discovered();
  const got = await s.authorize(config, email);
  const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
  expect(tokens.refresh_token).toBeDefined();

  // Okta's deactivation
  const off = await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] });
  expect(off.body.active).toBe(false);
  const refresh = await request(served.t.app).post('/oauth/token').type('form')
    .send({ client_id: s.login.client_id, client_secret: s.login.client_secret, grant_type: 'refresh_token', refresh_token: signedIn.body.refresh_token });
  expect(refresh.body.stat).toBe('error');
  const me = await request(served.t.app).post('/entity').type('form').send({ type_name: 'user', access_token: signedIn.body.access_token });
  expect(me.body.stat).toBe('error');
  await expect(s.oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  const userinfo = await fetch(config.serverMetadata().userinfo_endpoint!, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  expect(userinfo.status).toBe(401);
  const refused = await request(served.t.app).post('/oauth/auth_native_traditional').type('form')
    .send({ client_id: s.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD });
  expect(refused.body.stat).toBe('error');
  expect((await s.admin('/organizations/of', { uuid: user.id })).body.results).toEqual([]);
  const account = (await s.admin('/entity', { type_name: 'user', uuid: user.id })).body.result;
  expect(account).toBeDefined();

  // the audit log names the token; the account's activity says what the directory did
  const audit = await s.admin('/audit/list', { actor: 'scim' });
  expect(audit.body.results.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(['scim.user_deactivated', 'account.disabled', 'organization.member_removed', 'scim.user_provisioned']));
  expect(audit.body.results[0].actor).toEqual({ kind: 'scim', token_id: expect.stringMatching(/^scim_[0-9a-f]{24}$/) });
  const activity = await s.admin('/entity.activity', { type_name: 'user', uuid: user.id });
  expect(activity.body.results.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(['scim.user_deactivated', 'account.disabled', 'scim.user_provisioned']));

  // a PUT that says nothing of active leaves the person deactivated
  const put = await scim('PUT', `/Users/${user.id}`, { schemas: [USER], userName: email, emails: [{ value: email, primary: true }], title: 'Rear Admiral' });
  expect(put.body).toMatchObject({ active: false, title: 'Rear Admiral' });
  // another organization whose directory vouches for the same domain does not undo this one's deprovisioning
  const other = await organization();
  expect((await s.admin('/organizations/domains/add', { organization_id: other.id, domain, verified: 'true' })).body.stat).toBe('ok');
  expect((await other.scim('POST', '/Users', oktaUser(email))).status).toBe(201);
  expect((await request(served.t.app).post('/oauth/auth_native_traditional').type('form')
    .send({ client_id: s.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD })).body.stat).toBe('error');
  expect((await other.scim('DELETE', `/Users/${user.id}`)).status).toBe(204);

  // Entra ID's reactivation, a boolean as a string: the membership and the sign-in come back
  const on = await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'active', value: 'True' }] });
  expect(on.body.active).toBe(true);
  expect((await s.admin('/organizations/of', { uuid: user.id })).body.results).toHaveLength(1);
  const back = await request(served.t.app).post('/oauth/auth_native_traditional').type('form')
    .send({ client_id: s.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD });
  expect(back.body.stat).toBe('ok');

  // an operator's disable is not the directory's to undo
  expect((await s.admin('/entity.disable', { type_name: 'user', uuid: user.id, reason: 'fraud review' })).body.stat).toBe('ok');
  await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] });
  await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: true }] });
  expect((await request(served.t.app).post('/oauth/auth_native_traditional').type('form')
    .send({ client_id: s.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD })).body.stat).toBe('error');
  expect((await s.admin('/entity.enable', { type_name: 'user', uuid: user.id })).body.stat).toBe('ok');

  // delete: the membership gone, the account disabled (it belongs to no other organization); re-provisioned: the same account back
  expect((await scim('DELETE', `/Users/${user.id}`)).status).toBe(204);
  expect((await scim('GET', `/Users/${user.id}`)).status).toBe(404);
  expect((await s.admin('/organizations/of', { uuid: user.id })).body.results).toEqual([]);
  expect((await request(served.t.app).post('/oauth/auth_native_traditional').type('form')
    .send({ client_id: s.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD })).body.stat).toBe('error');
  const again = await scim('POST', '/Users', oktaUser(email));
  expect(again.status).toBe(201);
  expect(again.body.id).toBe(user.id);
  expect((await request(served.t.app).post('/oauth/auth_native_traditional').type('form')
    .send({ client_id: s.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD })).body.stat).toBe('ok');

  // with scim_deleted_accounts=delete, an account the directory made goes with it
  expect((await s.admin('/settings/set_default', { key: 'scim_deleted_accounts', value: 'delete' })).body.stat).toBe('ok');
  clock.advance(5_100);
  const temp = (await scim('POST', '/Users', oktaUser(`temp@${domain}`))).body;
  expect((await scim('DELETE', `/Users/${temp.id}`)).status).toBe(204);
  expect((await s.admin('/entity', { type_name: 'user', uuid: temp.id })).body.stat).toBe('error');
  expect((await s.admin('/settings/set_default', { key: 'scim_deleted_accounts', value: 'disable' })).body.stat).toBe('ok');
  expect((await s.admin('/settings/set_default', { key: 'scim_deleted_accounts', value: 'maybe' })).body.stat).toBe('error');
  clock.advance(5_100);
});

it('links an account that proved its address, never one that did not; the last owner stays', async () => {
  const org = await organization();
  const { scim, domain } = org;
  // an account registered at the domain and verified: linked, not duplicated; its own profile kept
  const email = `linus@${domain}`;
  const created = await s.admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Linus', emailVerified: '2026-11-27 10:00:00' }) });
  expect(created.body.stat).toBe('ok');
  const linked = await scim('POST', '/Users', oktaUser(email));
  expect(linked.status).toBe(201);
  const record = (await s.admin('/entity', { type_name: 'user', id: String(created.body.id) })).body.result;
  expect(linked.body.id).toBe(record.uuid);
  expect(record.givenName).toBe('Linus');
  // one registered unverified: refused (a stranger may have registered it)
  const strangerEmail = `mallory@${domain}`;
  expect((await s.admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: strangerEmail, password: PASSWORD }) })).body.stat).toBe('ok');
  expect((await scim('POST', '/Users', oktaUser(strangerEmail))).body).toMatchObject({ status: '409', scimType: 'uniqueness', detail: expect.stringContaining('never proved it') });

  // an organization at its most members: the directory is told which setting to raise
  expect((await s.admin('/settings/set_default', { key: 'organization_max_members', value: '1' })).body.stat).toBe('ok');
  const full = await scim('POST', '/Users', oktaUser(`one-too-many@${domain}`));
  expect(full).toMatchObject({ status: 403, body: { detail: expect.stringContaining('organization_max_members') } });
  expect((await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "one-too-many@${domain}"`)}`)).body.totalResults).toBe(0);
  expect((await s.admin('/settings/set_default', { key: 'organization_max_members', value: '1000' })).body.stat).toBe('ok');

  // the organization's last owner is not deactivated by its directory
  expect((await s.admin('/organizations/members/set_roles', { organization_id: org.id, uuid: record.uuid, roles: 'owner' })).body.stat).toBe('ok');
  const kept = await scim('PATCH', `/Users/${record.uuid}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] });
  expect(kept).toMatchObject({ status: 400, body: { scimType: 'mutability', detail: expect.stringContaining('last owner') } });
});

it('/organizations/scim/tokens: made by the application or an owner, listed without the token, revoked; each refusal names its argument', async () => {
  const org = await organization();
  const listed = await s.admin('/organizations/scim/tokens/list', { organization_id: org.id });
  expect(listed.body).toMatchObject({ stat: 'ok', scim_url: expect.stringMatching(/\/scim\/v2$/), results: [{ id: expect.stringMatching(/^scim_/), description: 'Okta', created_by: expect.stringMatching(/^client:/), revoked: null }] });
  expect(JSON.stringify(listed.body)).not.toContain(org.token);
  expect((await org.scim('GET', '/Users')).status).toBe(200);
  clock.advance(61_000);
  expect((await s.admin('/organizations/scim/tokens/list', { organization_id: org.id })).body.results[0].last_used).not.toBeNull();

  expect((await s.admin('/organizations/scim/tokens/revoke', { organization_id: org.id, token_id: listed.body.results[0].id })).body.stat).toBe('ok');
  expect((await org.scim('GET', '/Users')).status).toBe(401);
  expect((await s.admin('/organizations/scim/tokens/list', { organization_id: org.id })).body.results[0].revoked).not.toBeNull();

  const errorOf = async (path: string, params: Record<string, string>) => (await s.admin(path, params)).body;
  expect(await errorOf('/organizations/scim/tokens/create', {})).toMatchObject({ stat: 'error', code: 100, error: 'missing_argument', error_description: expect.stringContaining('organization_id'), request_id: expect.any(String) });
  expect(await errorOf('/organizations/scim/tokens/create', { organization_id: 'org_nope' })).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', error_description: expect.stringContaining('organization_id') });
  expect(await errorOf('/organizations/scim/tokens/create', { organization_id: org.id, description: 'x'.repeat(201) })).toMatchObject({ code: 200, error_description: expect.stringContaining('description') });
  expect(await errorOf('/organizations/scim/tokens/revoke', { organization_id: org.id })).toMatchObject({ code: 100, error_description: expect.stringContaining('token_id') });
  expect(await errorOf('/organizations/scim/tokens/revoke', { organization_id: org.id, token_id: 'scim_nope' })).toMatchObject({ code: 200, error_description: expect.stringContaining('token_id') });
  expect(await errorOf('/organizations/scim/configure', { organization_id: org.id, group_roles: 'not json' })).toMatchObject({ code: 200, error_description: expect.stringContaining('group_roles') });
  expect(await errorOf('/organizations/scim/configure', { organization_id: org.id, group_roles: '{"Admins":["emperor"]}' })).toMatchObject({ code: 200, error_description: expect.stringContaining('emperor') });
  expect(await errorOf('/organizations/scim/settings', {})).toMatchObject({ code: 100, error_description: expect.stringContaining('organization_id') });
  expect((await s.admin('/organizations/scim/configure', { organization_id: org.id, group_roles: '{"Admins":["admin"]}' })).body.stat).toBe('ok');
  expect((await s.admin('/organizations/scim/settings', { organization_id: org.id })).body)
    .toEqual({ stat: 'ok', organization_id: org.id, scim_url: expect.stringMatching(/\/scim\/v2$/), group_roles: { Admins: ['admin'] } });

  // an organization's owner makes tokens with its access token; a plain member may not
  const owner = await s.account();
  const member = await s.account();
  expect((await s.admin('/organizations/members/add', { organization_id: org.id, uuid: owner.uuid, roles: 'owner' })).body.stat).toBe('ok');
  expect((await s.admin('/organizations/members/add', { organization_id: org.id, uuid: member.uuid, roles: 'member' })).body.stat).toBe('ok');
  const tokenOf = async (email: string) => (await request(served.t.app).post('/oauth/auth_native_traditional').type('form')
    .send({ client_id: s.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD })).body.access_token as string;
  const byOwner = await request(served.t.app).post('/organizations/scim/tokens/create').type('form').send({ organization_id: org.id, access_token: await tokenOf(owner.email) });
  expect(byOwner.body).toMatchObject({ stat: 'ok', result: { created_by: expect.stringMatching(/^account:/) } });
  const byMember = await request(served.t.app).post('/organizations/scim/tokens/create').type('form').send({ organization_id: org.id, access_token: await tokenOf(member.email) });
  expect(byMember.body).toMatchObject({ stat: 'error', error_description: expect.stringContaining('owners') });
});
