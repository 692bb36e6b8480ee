import fs from 'node:fs';
import { DOMParser, XMLSerializer, type Document, type Element } from '@xmldom/xmldom';
import request from 'supertest';
import { buildApp } from '../../src/app';
import { openApiDocument } from '../../src/http/openapi';
import { createLogger } from '../../src/logger';
import { createRuntime } from '../../src/runtime';
import { ROUTES } from '../../src/http/routes';
import { basic, skipUnless } from '../helpers/backend';
import { servedTestApp } from '../helpers/browser';
import { schemaProblems } from '../helpers/json-schema';
import { openidClient } from '../helpers/openid-client';
import { pysaml2Idp, spKeys, stopPysaml2, SAML_PEERS, SAML_PEERS_MISSING } from '../helpers/saml';
import { cookieBrowser, firstForm, signInAtProvider, startOidcProvider } from '../helpers/social';

// An organization signing in through its own SAML identity provider (docs/organizations.md#connections):
// pysaml2 plays the identity provider (Okta, ADFS), reading Gatehouse's requests and answering as
// one would; Gatehouse must take the good response and refuse every hostile one.

skipUnless(SAML_PEERS, SAML_PEERS_MISSING)('organizations signing in through their identity providers', () => {
  let served: Awaited<ReturnType<typeof servedTestApp>>;
  let keys: Awaited<ReturnType<typeof spKeys>>;
  let otherKeys: Awaited<ReturnType<typeof spKeys>>;
  const IDP = 'https://idp.acme.example';
  const PASSWORD = 'correct horse battery';

  const owner = () => basic(served.t.local.clients.owner.client_id, served.t.local.clients.owner.client_secret);
  const admin = (path: string, body: Record<string, string>) => request(served.t.app).post(path).set('Authorization', owner()).type('form').send(body);
  const away = (next: URL) => next.origin !== new URL(served.base).origin;
  const document = openApiDocument(ROUTES, 'test');
  const fits = (path: string, body: unknown) =>
    expect(schemaProblems((document.paths as Record<string, any>)[path].post.responses[200].content['application/json'].schema, body, document)).toEqual([]);

  interface Org { id: string; domain: string; connection: string; startUrl: string; metadataUrl: string; idp: Record<string, string> }

  /** An organization with a verified domain and a SAML connection to its own pysaml2 identity provider. */
  async function organization(tag: string, extra: Record<string, string> = {}): Promise<Org> {
    const domain = `${tag}-${Math.random().toString(36).slice(2, 8)}.example`;
    const created = await admin('/organizations/create', { name: `Org ${tag}`, slug: domain.replace(/\./g, '-') });
    const id = created.body.id as string;
    expect((await admin('/organizations/domains/add', { organization_id: id, domain, verified: 'true' })).body.stat).toBe('ok');
    const idp = { entity_id: `${IDP}/${domain}`, sso: `${IDP}/${domain}/sso`, key_file: keys.key_file, cert_file: keys.cert_file };
    const { xml } = await pysaml2Idp<{ xml: string }>({ op: 'metadata', idp });
    const added = await admin('/organizations/connections/add', { organization_id: id, type: 'saml', metadata: xml, name: `${tag} IdP`, ...extra });
    if (added.body.stat !== 'ok') throw new Error(JSON.stringify(added.body));
    fits('/organizations/connections/add', added.body);
    const spMetadata = (await request(served.t.app).get(new URL(added.body.metadata_url).pathname)).text;
    return { id, domain, connection: added.body.id, startUrl: added.body.start_url, metadataUrl: added.body.metadata_url, idp: { ...idp, sp_metadata: spMetadata } };
  }

  interface Answer { acs: string; saml_response: string; relay_state: string; request_id: string; xml: string; signed_request: boolean }

  /** The browser at the connection's start: to the identity provider with a request, which answers for `email`. */
  async function toIdp(org: Org, email: string, browser = cookieBrowser(), start = org.startUrl, extra: Record<string, unknown> = {}) {
    const sent = await browser.go(start, { stopAt: away });
    const url = new URL(sent.url);
    expect(`${url.origin}${url.pathname}`).toBe(org.idp.sso);
    const answer = await pysaml2Idp<Answer>({
      op: 'respond', idp: org.idp, query: url.search.slice(1), identity: { givenName: ['Grace'], sn: ['Hopper'] },
      name_id: { format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', text: email }, ...extra,
    });
    return { answer, browser };
  }

  /** The browser posting a response to the ACS URL (as the identity provider's page would), then following this site's redirects. */
  const post = (browser: ReturnType<typeof cookieBrowser>, answer: Pick<Answer, 'acs' | 'relay_state'>, samlResponse: string) =>
    browser.go(answer.acs, { method: 'POST', form: { SAMLResponse: samlResponse, ...(answer.relay_state && { RelayState: answer.relay_state }) }, stopAt: away });

  const b64 = (xml: string) => Buffer.from(xml).toString('base64');

  beforeAll(async () => {
    keys = await spKeys();
    otherKeys = await spKeys();
    served = await servedTestApp();
  }, 60_000);

  afterAll(async () => {
    await stopPysaml2();
    await served?.close();
    for (const k of [keys, otherKeys]) if (k) fs.rmSync(k.dir, { recursive: true, force: true });
  });

  describe('connections', () => {
    it('list and update answer the connection, never a secret; the service provider metadata names the ACS URL; an unknown one is named', async () => {
      const org = await organization('crud');
      const listed = await admin('/organizations/connections/list', { organization_id: org.id });
      fits('/organizations/connections/list', listed.body);
      expect(listed.body.results).toEqual([expect.objectContaining({ id: org.connection, type: 'saml', idp_entity_id: org.idp.entity_id, required: false, idp_initiated: false })]);
      const metadata = (await request(served.t.app).get(new URL(org.metadataUrl).pathname)).text;
      expect(metadata).toContain(`entityID="${org.metadataUrl}"`);
      expect(metadata).toContain(`Location="${served.base}/sso/${org.connection}/acs"`);
      expect(metadata).toContain('AuthnRequestsSigned="true"');
      const updated = await admin('/organizations/connections/update', { organization_id: org.id, connection_id: org.connection, name: 'Renamed', idp_initiated: 'true' });
      fits('/organizations/connections/update', updated.body);
      expect(updated.body.result).toMatchObject({ name: 'Renamed', idp_initiated: true });
      expect((await admin('/organizations/connections/update', { organization_id: org.id, connection_id: 'con_000000000000000000000000' })).body)
        .toMatchObject({ stat: 'error', error: 'invalid_argument', argument_name: 'connection_id' });
    });

    it.each([
      ['no type', { type: 'ldap' }, 'type'],
      ['no metadata', { type: 'saml' }, 'metadata'],
      ['a service provider\'s metadata', { type: 'saml', metadata: '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"><md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"/></md:EntityDescriptor>' }, 'metadata'],
      ['a DOCTYPE', { type: 'saml', metadata: '<!DOCTYPE x [<!ENTITY a "b">]><x/>' }, 'metadata'],
      ['an http metadata URL', { type: 'saml', metadata_url: 'http://idp.example/metadata' }, 'metadata_url'],
      ['an OpenID connection without its secret', { type: 'oidc', issuer: 'https://login.example.com', client_id: 'x' }, 'client_secret'],
    ])('refuses %s, naming the parameter', async (_what, fields, argument) => {
      const created = await admin('/organizations/create', { name: 'Refusals', slug: `refusals-${Math.random().toString(36).slice(2, 8)}` });
      const res = await admin('/organizations/connections/add', { organization_id: created.body.id, ...fields });
      expect(res.body).toMatchObject({ stat: 'error', error: 'invalid_argument', argument_name: argument });
      expect(res.body.request_id).toEqual(expect.any(String));
    });
  });

  describe('signing in through an organization\'s identity provider', () => {
    it('a first sign-in creates the account, verified, a member with the default roles, with the browser signed in to the account page; the next one is the same account', async () => {
      const org = await organization('jit');
      const email = `grace@${org.domain}`;
      const { answer, browser } = await toIdp(org, email);
      expect(answer.signed_request).toBe(true);
      const page = await post(browser, answer, answer.saml_response);
      expect(new URL(page.url).pathname).toBe('/account');
      expect(page.body).toContain(email);
      const found = await admin('/entity.find', { type_name: 'user', filter: `email = '${email}'` });
      expect(found.body.results).toEqual([expect.objectContaining({ email, givenName: 'Grace', familyName: 'Hopper' })]);
      expect(found.body.results[0].emailVerified).not.toBeNull();
      const members = await admin('/organizations/members/list', { organization_id: org.id });
      expect(members.body.results).toEqual([expect.objectContaining({ email, joined_by: 'connection', roles: ['member'] })]);
      // again, in another browser: the same account, not a second one
      const again = await toIdp(org, email);
      expect(new URL((await post(again.browser, again.answer, again.answer.saml_response)).url).pathname).toBe('/account');
      expect((await admin('/entity.count', { type_name: 'user', filter: `email = '${email}'` })).body.total_count).toBe(1);
    }, 60_000);

    it('groups map to the organization\'s roles, set again at every sign-in', async () => {
      const AFFILIATION = 'urn:mace:dir:attribute-def:eduPersonAffiliation';
      const org = await organization('groups', { groups: JSON.stringify({ attribute: AFFILIATION, roles: { staff: ['admin'], member: ['member'] } }) });
      const email = `linus@${org.domain}`;
      const roles = async () => (await admin('/organizations/members/list', { organization_id: org.id })).body.results.find((m: { email: string }) => m.email === email)?.roles;
      const first = await toIdp(org, email, cookieBrowser(), org.startUrl, { identity: { eduPersonAffiliation: ['staff'] } });
      expect(new URL((await post(first.browser, first.answer, first.answer.saml_response)).url).pathname).toBe('/account');
      expect(await roles()).toEqual(['admin']);
      const second = await toIdp(org, email, cookieBrowser(), org.startUrl, { identity: { eduPersonAffiliation: ['member'] } });
      expect(new URL((await post(second.browser, second.answer, second.answer.saml_response)).url).pathname).toBe('/account');
      expect(await roles()).toEqual(['member']);
    });

    it('an account with that verified address is linked, never duplicated; one that never proved it is refused', async () => {
      const org = await organization('link');
      const email = `ada@${org.domain}`;
      const made = await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, emailVerified: '2026-01-01 00:00:00' }) });
      expect(made.body.stat).toBe('ok');
      const { answer, browser } = await toIdp(org, email);
      expect(new URL((await post(browser, answer, answer.saml_response)).url).pathname).toBe('/account');
      const unverified = `eve@${org.domain}`;
      expect((await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: unverified, password: PASSWORD }) })).body.stat).toBe('ok');
      const other = await toIdp(org, unverified);
      const refused = await post(other.browser, other.answer, other.answer.saml_response);
      expect(refused.status).toBe(400);
      expect(refused.body).toMatch(/never proved it/);
    }, 60_000);

    it('a transient NameID names nobody; an address whose account is another identity of this provider is not taken over by it', async () => {
      const org = await organization('names');
      const transient = await toIdp(org, `t@${org.domain}`, cookieBrowser(), org.startUrl, { name_id: { format: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient', text: '_t1' } });
      const refused = await post(transient.browser, transient.answer, transient.answer.saml_response);
      expect(refused.status).toBe(400);
      expect(refused.body).toMatch(/transient NameID/);
      // the address belonged to a person with the persistent id p-1; a new person gets the address and the id p-2
      const email = `reused@${org.domain}`;
      const first = await toIdp(org, email, cookieBrowser(), org.startUrl, { identity: { mail: [email] }, name_id: { format: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent', text: 'p-1' } });
      const firstPage = await post(first.browser, first.answer, first.answer.saml_response);
      expect(new URL(firstPage.url).pathname).toBe('/account');
      const second = await toIdp(org, email, cookieBrowser(), org.startUrl, { identity: { mail: [email] }, name_id: { format: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent', text: 'p-2' } });
      const taken = await post(second.browser, second.answer, second.answer.saml_response);
      expect(taken.status).toBe(400);
      expect(taken.body).toMatch(/linked to another identity/);
    });

    it('a mail provider\'s domain never sends anyone to a connection, even claimed and verified', async () => {
      const org = await organization('webmail');
      expect((await admin('/organizations/domains/add', { organization_id: org.id, domain: 'gmail.com', verified: 'true' })).body.stat).toBe('ok');
      const login = served.t.local.clients.login;
      const page = await cookieBrowser().go(`${served.base}/signin?${new URLSearchParams({ client_id: login.client_id, redirect_uri: `${served.base}/account/callback`, locale: 'en-US', login_hint: 'someone@gmail.com' })}`, { stopAt: away });
      expect(new URL(page.url).pathname).toBe('/signin');
    });

    it('an address outside the organization\'s verified domains is refused', async () => {
      const org = await organization('domain');
      const { answer, browser } = await toIdp(org, 'mallory@elsewhere.example');
      const page = await post(browser, answer, answer.saml_response);
      expect(page.status).toBe(400);
      expect(page.body).toMatch(/verified domains only/);
    });

    it('home-realm discovery: the hosted sign-in sends an address at the domain to its connection, with no password asked', async () => {
      const org = await organization('hrd');
      const login = served.t.local.clients.login;
      expect((await admin('/settings/set', { for_client_id: login.client_id, key: 'redirect_uris', value: 'https://app.example.com/cb' })).body.stat).toBe('ok');
      const entry = new URLSearchParams({ client_id: login.client_id, redirect_uri: 'https://app.example.com/cb', locale: 'en-US', state: 's1', login_hint: `linus@${org.domain}` });
      const browser = cookieBrowser();
      const hinted = await browser.go(`${served.base}/signin?${entry}`, { stopAt: away });
      expect(new URL(hinted.url).origin + new URL(hinted.url).pathname).toBe(org.idp.sso);
      // the identity provider answers; the app gets its code and state, the person never typed a password
      const answer = await pysaml2Idp<Answer>({
        op: 'respond', idp: org.idp, query: new URL(hinted.url).search.slice(1), identity: {},
        name_id: { format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', text: `linus@${org.domain}` },
      });
      const back = new URL((await post(browser, answer, answer.saml_response)).url);
      expect(`${back.origin}${back.pathname}`).toBe('https://app.example.com/cb');
      expect(back.searchParams.get('state')).toBe('s1');
      expect(back.searchParams.get('code')).toEqual(expect.any(String));
      // the same address typed on the sign-in form, with any password: to the connection too
      const form = await browser.go(`${served.base}/signin?${new URLSearchParams({ client_id: login.client_id, redirect_uri: 'https://app.example.com/cb', locale: 'en-US' })}`);
      const fields = firstForm(form.body, form.url);
      const typed = await browser.go(fields.action, { method: 'POST', form: { ...fields.fields, signInEmailAddress: `linus@${org.domain}`, currentPassword: 'whatever it is' }, stopAt: away });
      // (a form's answer: a page of this site that goes on by itself, the page's form-action never widened)
      const onward = /http-equiv="refresh" content="0;url=([^"]+)"/.exec(typed.body)?.[1].replace(/&amp;/g, '&');
      expect(onward).toMatch(new RegExp(`^/sso/${org.connection}/start\\?`));
      const there = await browser.go(new URL(onward!, served.base).toString(), { stopAt: away });
      expect(new URL(there.url).origin + new URL(there.url).pathname).toBe(org.idp.sso);
      // and "Sign in with your organization": an address no organization signs in with is told so
      const ask = await browser.go(`${served.base}/signin/organization?${new URLSearchParams({ client_id: login.client_id, redirect_uri: 'https://app.example.com/cb', locale: 'en-US' })}`);
      const askForm = firstForm(ask.body, ask.url);
      const none = await browser.go(askForm.action, { method: 'POST', form: { ...askForm.fields, email: 'someone@nowhere.example' } });
      expect(none.status).toBe(400);
      expect(none.body).toContain('No organization signs in with this address here');
    });
  });

  describe('an OpenID app asking for an organization', () => {
    it('`organization` sends the person straight to its connection, and the app gets its code', async () => {
      const org = await organization('oidc-app');
      const login = served.t.local.clients.login;
      expect((await admin('/settings/set', { for_client_id: login.client_id, key: 'redirect_uris', value: 'https://app.example.com/cb' })).body.stat).toBe('ok');
      const oidc = openidClient();
      const config = await oidc.discovery(new URL(served.base), login.client_id, login.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
      const verifier = oidc.randomPKCECodeVerifier();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: 'https://app.example.com/cb', scope: 'openid email', state: 'st', organization: org.id,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
      });
      const browser = cookieBrowser();
      const atIdp = await browser.go(url.toString(), { stopAt: away });
      expect(new URL(atIdp.url).origin + new URL(atIdp.url).pathname).toBe(org.idp.sso);
      const answer = await pysaml2Idp<Answer>({
        op: 'respond', idp: org.idp, query: new URL(atIdp.url).search.slice(1), identity: {},
        name_id: { format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', text: `app-user@${org.domain}` },
      });
      const back = new URL((await post(browser, answer, answer.saml_response)).url);
      expect(`${back.origin}${back.pathname}`).toBe('https://app.example.com/cb');
      const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: 'st' });
      expect(tokens.claims()!.email).toBe(`app-user@${org.domain}`);
    }, 60_000);
  });

  describe('an OpenID connection', () => {
    it('signs in through the organization\'s OpenID provider: the account made, verified, a member; an address the provider did not verify is refused', async () => {
      // example.test: the domain the test provider's accounts have addresses at
      const created = await admin('/organizations/create', { name: 'OpenID org', slug: `oidc-${Math.random().toString(36).slice(2, 8)}` });
      const id = created.body.id as string;
      expect((await admin('/organizations/domains/add', { organization_id: id, domain: 'example.test', verified: 'true' })).body.stat).toBe('ok');
      const added = await admin('/organizations/connections/add', {
        organization_id: id, type: 'oidc', issuer: 'http://127.0.0.1:1', client_id: 'gatehouse', client_secret: 'provider-secret', name: 'Acme OpenID',
      });
      fits('/organizations/connections/add', added.body);
      expect(added.body.result).not.toHaveProperty('client_secret');
      expect(JSON.stringify(added.body)).not.toContain('provider-secret');
      const provider = await startOidcProvider([added.body.redirect_uri]);
      try {
        expect((await admin('/organizations/connections/update', { organization_id: id, connection_id: added.body.id, issuer: provider.issuer })).body.stat).toBe('ok');
        const name = `oidc${Math.random().toString(36).slice(2, 8)}`;
        const page = await signInAtProvider(added.body.start_url, name);
        expect(new URL(page.url).pathname).toBe('/account');
        expect(page.body).toContain(`${name}@example.test`);
        const members = await admin('/organizations/members/list', { organization_id: id });
        expect(members.body.results).toEqual([expect.objectContaining({ email: `${name}@example.test`, joined_by: 'connection' })]);
        const found = await admin('/entity.find', { type_name: 'user', filter: `email = '${name}@example.test'` });
        expect(found.body.results[0]).toMatchObject({ givenName: `${name[0].toUpperCase()}${name.slice(1)}`, familyName: 'Tester' });
        const refused = await signInAtProvider(added.body.start_url, `unverified${name}`);
        expect(refused.status).toBe(400);
        expect(refused.body).toMatch(/gave no email address/);
      } finally {
        await provider.stop();
      }
    }, 60_000);
  });

  describe('required sign-in through the organization', () => {
    it('a member\'s password sign-in is refused, naming the connection; a non-member\'s is not', async () => {
      const org = await organization('required', { required: 'true' });
      const email = `outside-${Math.random().toString(36).slice(2, 8)}@contractor.example`;
      const made = await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD }) });
      expect((await admin('/organizations/members/add', { organization_id: org.id, uuid: made.body.uuid, roles: 'member' })).body.stat).toBe('ok');
      const login = served.t.local.clients.login;
      const refused = await request(served.t.app).post('/oauth/auth_native_traditional').type('form')
        .send({ client_id: login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD });
      expect(refused.body).toMatchObject({ stat: 'error', code: 210 });
      expect(refused.body.error_description).toContain('required IdP');
      // a non-member with a password signs in as before
      const free = `free-${Math.random().toString(36).slice(2, 8)}@contractor.example`;
      expect((await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: free, password: PASSWORD }) })).body.stat).toBe('ok');
      expect((await request(served.t.app).post('/oauth/auth_native_traditional').type('form')
        .send({ client_id: login.client_id, locale: 'en-US', signInEmailAddress: free, currentPassword: PASSWORD })).body.stat).toBe('ok');
    });

    it('IdP-initiated, where the connection takes it: the account page, signed in', async () => {
      const org = await organization('unsolicited', { idp_initiated: 'true' });
      const answer = await pysaml2Idp<Answer>({
        op: 'unsolicited', idp: org.idp, sp_entity_id: org.metadataUrl, acs: `${served.base}/sso/${org.connection}/acs`,
        name_id: { format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', text: `launcher@${org.domain}` },
      });
      const browser = cookieBrowser();
      const page = await post(browser, { acs: answer.acs, relay_state: '' }, answer.saml_response);
      expect(new URL(page.url).pathname).toBe('/account');
      expect(page.body).toContain(`launcher@${org.domain}`);
      // and once only
      expect((await post(cookieBrowser(), { acs: answer.acs, relay_state: '' }, answer.saml_response)).status).toBe(400);
    });

    it('one response posted to two pods at once: one sign-in, the rest refused', async () => {
      const org = await organization('pods');
      const { answer } = await toIdp(org, `race@${org.domain}`);
      const second = createRuntime(served.t.backend.config, createLogger('silent'));
      const podB = buildApp({ services: second.services, defaultApp: 'local' });
      try {
        const acs = new URL(answer.acs).pathname;
        const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => request(i % 2 ? podB : served.t.app).post(acs).type('form')
          .send({ SAMLResponse: answer.saml_response, RelayState: answer.relay_state })));
        expect(answers.filter((r) => r.status === 303)).toHaveLength(1);
        for (const lost of answers.filter((r) => r.status !== 303)) expect(lost.text).toMatch(/used before/);
      } finally {
        await second.close();
      }
    });
  });

  describe('hostile responses are refused', () => {
    let org: Org;
    beforeAll(async () => {
      org = await organization('hostile');
    });

    const good = async (email = `victim@${org.domain}`, extra: Record<string, unknown> = {}) => toIdp(org, email, cookieBrowser(), org.startUrl, extra);
    const parse = (xml: string): Document => new DOMParser().parseFromString(xml, 'text/xml');
    const serialize = (doc: Document) => new XMLSerializer().serializeToString(doc);
    const assertionOf = (doc: Document) => doc.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:assertion', 'Assertion')[0] as Element;
    const refusedWith = async (mutate: (xml: string) => string, message: RegExp, extra: Record<string, unknown> = {}) => {
      const { answer, browser } = await good(undefined, extra);
      const mutated = mutate(answer.xml);
      expect(mutated).not.toBe(answer.xml);
      const page = await post(browser, answer, b64(mutated));
      expect(page.status).toBe(400);
      expect(page.body).toMatch(message);
      expect(page.body).not.toMatch(/at \w+ \(/);
    };

    it('unsigned', () => refusedWith((xml) => {
      const doc = parse(xml);
      for (const s of [...Array.from(doc.getElementsByTagNameNS('http://www.w3.org/2000/09/xmldsig#', 'Signature'))]) s.parentNode!.removeChild(s);
      return serialize(doc);
    }, /not signed|not a valid/));

    it('signed by another key, its certificate in KeyInfo', async () => {
      const { answer, browser } = await toIdp(org, `victim@${org.domain}`, cookieBrowser(), org.startUrl, {});
      const forged = await pysaml2Idp<Answer>({
        op: 'unsolicited', idp: { ...org.idp, key_file: otherKeys.key_file, cert_file: otherKeys.cert_file },
        sp_entity_id: org.metadataUrl, acs: answer.acs, name_id: { format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', text: `victim@${org.domain}` },
      });
      expect(forged.xml).toContain('X509Certificate');
      const page = await post(browser, answer, forged.saml_response);
      expect(page.status).toBe(400);
      expect(page.body).toMatch(/not signed by the identity provider/);
    });

    it('tampered after signing (the NameID changed)', () => refusedWith((xml) => xml.replace(/(<(?:\w+:)?NameID[^>]*>)victim@/, '$1admin@'), /not signed by the identity provider/));

    it('a comment inside the NameID: the whole value as signed is read, never the text before the comment', async () => {
      // the identity provider vouched for admin@<domain>.attacker.example; a comment after <domain> would make a reader of the first text node see admin@<domain>
      const claimed = `admin@${org.domain}.attacker.example`;
      const { answer, browser } = await toIdp(org, claimed);
      const mutated = answer.xml.replace(`>${claimed}<`, `>admin@${org.domain}<!---->.attacker.example<`);
      expect(mutated).not.toBe(answer.xml);
      const page = await post(browser, answer, b64(mutated));
      expect(page.status).toBe(400);
      expect(page.body).toMatch(/verified domains only/);
      expect(page.body).toContain(`${org.domain}.attacker.example is not one of them`);
    });

    it('a DOCTYPE', () => refusedWith((xml) => `<!DOCTYPE r [<!ENTITY e SYSTEM "file:///etc/passwd">]>${xml.replace(/^<\?xml[^>]*\?>/, '')}`, /DOCTYPE/));

    it('another service provider\'s audience, recipient or destination', async () => {
      await refusedWith((xml) => xml.replace(/(<(?:\w+:)?Audience>)[^<]*/, '$1https://other.example/sp'), /not signed|audience/i);
      await refusedWith((xml) => xml.replace(/Destination="[^"]*"/, 'Destination="https://other.example/acs"'), /Destination/);
    });

    it('expired: a signed assertion past its NotOnOrAfter', async () => {
      const browser = cookieBrowser();
      const started = await browser.go(org.startUrl, { stopAt: away });
      const answer = await pysaml2Idp<Answer>({
        op: 'respond', idp: { ...org.idp, lifetime_minutes: -10 }, query: new URL(started.url).search.slice(1), identity: {},
        name_id: { format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', text: `victim@${org.domain}` },
      });
      const page = await post(browser, answer, answer.saml_response);
      expect(page.status).toBe(400);
      expect(page.body).toMatch(/expired|not a valid/);
    });

    it('signed by the right key for another Issuer, or for another Recipient', async () => {
      const cases: [Record<string, unknown>, RegExp][] = [[{ idp: { ...org.idp, entity_id: 'https://evil.example/idp' } }, /Issuer/], [{ idp: org.idp, destination: 'https://other.example/acs' }, /Recipient|Destination/]];
      for (const [override, message] of cases) {
        const browser = cookieBrowser();
        const started = await browser.go(org.startUrl, { stopAt: away });
        const answer = await pysaml2Idp<Answer>({
          op: 'respond', query: new URL(started.url).search.slice(1), identity: {},
          name_id: { format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', text: `victim@${org.domain}` }, ...override,
        });
        const page = await post(browser, { acs: `${served.base}/sso/${org.connection}/acs`, relay_state: answer.relay_state }, answer.saml_response);
        expect({ status: page.status, refused: message.test(page.body) }).toEqual({ status: 400, refused: true });
      }
    });

    it('replayed: the same response twice', async () => {
      const { answer, browser } = await good();
      expect(new URL((await post(browser, answer, answer.saml_response)).url).pathname).toBe('/account');
      const again = await post(cookieBrowser(), answer, answer.saml_response);
      expect(again.status).toBe(400);
      expect(again.body).toMatch(/used before/);
    });

    it('InResponseTo of a request this browser did not make', async () => {
      const first = await good();
      // another browser brings the response to a request it never made
      const page = await post(cookieBrowser(), { acs: first.answer.acs, relay_state: '' }, first.answer.saml_response);
      expect(page.status).toBe(400);
      expect(page.body).toMatch(/request this browser did not make/);
    });

    it('unsolicited (IdP-initiated) while the connection does not take them', async () => {
      const forged = await pysaml2Idp<Answer>({
        op: 'unsolicited', idp: org.idp, sp_entity_id: org.metadataUrl, acs: `${served.base}/sso/${org.connection}/acs`,
        name_id: { format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', text: `victim@${org.domain}` },
      });
      const page = await post(cookieBrowser(), { acs: forged.acs, relay_state: '' }, forged.saml_response);
      expect(page.status).toBe(400);
      expect(page.body).toMatch(/answers no request/);
    });

    // signature wrapping, as SAML Raider numbers it: the signed assertion kept somewhere its
    // signature still verifies, and an assertion for admin@<domain> where a careless reader looks
    const DS = 'http://www.w3.org/2000/09/xmldsig#';
    const SAML = 'urn:oasis:names:tc:SAML:2.0:assertion';
    const signatureOf = (e: Element) => Array.from(e.childNodes).find((n) => (n as Element).localName === 'Signature' && (n as Element).namespaceURI === DS) as Element;
    const evilOf = (a: Element, keepSignature: boolean): Element => {
      const evil = a.cloneNode(true) as Element;
      if (!keepSignature) evil.removeChild(signatureOf(evil));
      evil.getElementsByTagNameNS(SAML, 'NameID')[0].textContent = `admin@${org.domain}`;
      return evil;
    };
    const objectIn = (doc: Document, signature: Element, child: Element) => {
      const object = doc.createElementNS(DS, `${signature.prefix}:Object`);
      object.appendChild(child);
      signature.appendChild(object);
    };
    const wraps: [string, (doc: Document, a: Element) => void][] = [
      ['XSW1: the signed response inside the signature of an unsigned evil response', (doc) => {
        const response = doc.documentElement!;
        const original = response.cloneNode(true) as Element;
        const signature = signatureOf(response);
        assertionOf(doc).getElementsByTagNameNS(SAML, 'NameID')[0].textContent = `admin@${org.domain}`;
        response.setAttribute('ID', '_evil');
        objectIn(doc, signature, original);
      }],
      ['XSW2: the signed response put before the evil response\'s signature', (doc) => {
        const response = doc.documentElement!;
        const original = response.cloneNode(true) as Element;
        const signature = signatureOf(response);
        assertionOf(doc).getElementsByTagNameNS(SAML, 'NameID')[0].textContent = `admin@${org.domain}`;
        response.setAttribute('ID', '_evil');
        response.insertBefore(original, signature);
      }],
      ['XSW3: an unsigned evil assertion before the signed one', (_doc, a) => {
        const evil = evilOf(a, false);
        evil.setAttribute('ID', '_evil');
        a.parentNode!.insertBefore(evil, a);
      }],
      ['XSW4: the signed assertion inside an unsigned evil one', (_doc, a) => {
        const evil = evilOf(a, false);
        evil.setAttribute('ID', '_evil');
        a.parentNode!.replaceChild(evil, a);
        evil.appendChild(a);
      }],
      ['XSW5: the evil assertion keeps the signature, a copy of the original after it', (_doc, a) => {
        const copy = a.cloneNode(true) as Element;
        copy.removeChild(signatureOf(copy));
        a.getElementsByTagNameNS(SAML, 'NameID')[0].textContent = `admin@${org.domain}`;
        a.parentNode!.appendChild(copy);
      }],
      ['XSW6: the evil assertion keeps the signature, the original inside it', (doc, a) => {
        const copy = a.cloneNode(true) as Element;
        copy.removeChild(signatureOf(copy));
        a.getElementsByTagNameNS(SAML, 'NameID')[0].textContent = `admin@${org.domain}`;
        objectIn(doc, signatureOf(a), copy);
      }],
      ['XSW7: the signed assertion in an Extensions element, an unsigned evil one in its place', (doc, a) => {
        const evil = evilOf(a, false);
        const extensions = doc.createElementNS('urn:oasis:names:tc:SAML:2.0:protocol', `${doc.documentElement!.prefix}:Extensions`);
        a.parentNode!.replaceChild(evil, a);
        extensions.appendChild(a);
        doc.documentElement!.insertBefore(extensions, doc.documentElement!.firstChild!.nextSibling);
      }],
      ['XSW8: the evil assertion keeps the signature, the original without it inside that signature', (doc, a) => {
        const copy = a.cloneNode(true) as Element;
        copy.removeChild(signatureOf(copy));
        const signature = signatureOf(a);
        a.getElementsByTagNameNS(SAML, 'NameID')[0].textContent = `admin@${org.domain}`;
        objectIn(doc, signature, copy);
      }],
    ];

    it.each(wraps)('%s', async (_name, wrap) => {
      // XSW1 and XSW2 wrap a signed response: the identity provider signs its responses too for those
      const signResponse = _name.startsWith('XSW1') || _name.startsWith('XSW2');
      await refusedWith((xml) => {
        const doc = parse(xml);
        wrap(doc, assertionOf(doc));
        return serialize(doc);
      }, /not signed|not a valid|more than one|verified domains|Issuer|Recipient/, signResponse ? { sign_response: true } : {});
    });
  });
});
