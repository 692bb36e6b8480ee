import fs from 'node:fs';
import { deflateRawSync } from 'node:zlib';
import request from 'supertest';
import { openApiDocument } from '../../src/http/openapi';
import { ROUTES } from '../../src/http/routes';
import { rotateSigningKeys } from '../../src/usecases/keys/signing-keys';
import { basic, skipUnless } from '../helpers/backend';
import { schemaProblems } from '../helpers/json-schema';
import { servedTestApp } from '../helpers/browser';
import { postedResponse, pysaml2, spKeys, stopPysaml2, type SpConfig, SAML_PEERS, SAML_PEERS_MISSING } from '../helpers/saml';
import { cookieBrowser, firstForm } from '../helpers/social';

// Gatehouse as a SAML identity provider (docs/saml.md#identity-provider), judged by a service
// provider written by others: pysaml2 makes the requests and checks every answer (signature,
// audience, recipient, destination, times, InResponseTo) as it would for any identity provider.

skipUnless(SAML_PEERS, SAML_PEERS_MISSING)('Gatehouse as a SAML identity provider', () => {
  let served: Awaited<ReturnType<typeof servedTestApp>>;
  let keys: Awaited<ReturnType<typeof spKeys>>;
  let idpMetadata: string;
  const PASSWORD = 'correct horse battery';
  const SP = 'https://sp.example.com';

  const owner = () => basic(served.t.local.clients.owner.client_id, served.t.local.clients.owner.client_secret);
  const admin = (path: string, body: Record<string, string>) => request(served.t.app).post(path).set('Authorization', owner()).type('form').send(body);
  const sp = (name: string, extra: Partial<SpConfig> = {}): SpConfig => ({
    entity_id: `${SP}/${name}/metadata`, acs: `${SP}/${name}/acs`, slo: `${SP}/${name}/slo`, key_file: keys.key_file, cert_file: keys.cert_file, idp_metadata: idpMetadata, ...extra,
  });
  const away = (next: URL) => next.origin !== new URL(served.base).origin;

  /** The answer of an endpoint fits what the API's document says of it. */
  const document = openApiDocument(ROUTES, 'test');
  const fits = (path: string, body: unknown) =>
    expect(schemaProblems((document.paths as Record<string, any>)[path].post.responses[200].content['application/json'].schema, body, document)).toEqual([]);

  async function register(config: SpConfig, extra: Record<string, string> = {}) {
    const { xml } = await pysaml2<{ xml: string }>({ op: 'metadata', sp: config });
    const added = await admin('/saml/service_providers/add', { metadata: xml, ...extra });
    if (added.body.stat !== 'ok') throw new Error(JSON.stringify(added.body));
    fits('/saml/service_providers/add', added.body);
    return added.body as { id: string; entity_id: string };
  }

  async function account(verified = true) {
    const email = `saml-${Math.random().toString(36).slice(2)}@example.com`;
    const created = await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({
      email, password: PASSWORD, givenName: 'Ada', familyName: 'Lovelace', ...(verified && { emailVerified: '2026-01-01 00:00:00' }),
    }) });
    if (created.body.stat !== 'ok') throw new Error(JSON.stringify(created.body));
    return { email, id: created.body.id as number };
  }

  type Judged = { ok: boolean; error?: string; name_id?: string; name_id_format?: string; attributes?: Record<string, string[]>; session_index?: string; audience?: string[]; in_response_to?: string; authn_context?: string };

  /** A browser at a service provider's request: signs in with the password when the hosted page asks; answers the page that posts the response. */
  async function signIn(config: SpConfig, email: string | undefined, browser = cookieBrowser(), options: Record<string, unknown> = {}) {
    const made = await pysaml2<{ id: string; url?: string; action?: string; fields?: Record<string, string> }>({ op: 'request', sp: config, binding: 'redirect', ...options });
    let page = made.url ? await browser.go(made.url, { stopAt: away })
      : await browser.go(made.action!, { method: 'POST', form: made.fields!, stopAt: away });
    const asked = new URL(page.url).pathname === '/signin';
    if (asked && email) {
      const form = firstForm(page.body, page.url);
      page = await browser.go(form.action, { method: 'POST', form: { ...form.fields, signInEmailAddress: email, currentPassword: PASSWORD }, stopAt: away });
    }
    return { made, page, asked, browser };
  }

  async function judged(config: SpConfig, page: { body: string }, outstanding: string[]): Promise<Judged & { relayState?: string; action: string }> {
    const posted = postedResponse(page.body);
    const verdict = await pysaml2<Judged>({ op: 'response', sp: config, saml_response: posted.samlResponse, outstanding });
    return { ...verdict, action: posted.action, ...(posted.relayState !== undefined && { relayState: posted.relayState }) };
  }

  beforeAll(async () => {
    keys = await spKeys();
    served = await servedTestApp();
    const res = await request(served.t.app).get('/saml/metadata');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/samlmetadata\+xml/);
    idpMetadata = res.text;
  }, 60_000);

  afterAll(async () => {
    await stopPysaml2();
    await served?.close();
    if (keys) fs.rmSync(keys.dir, { recursive: true, force: true });
  });

  describe('metadata', () => {
    it('names the entity by its own URL, both SSO bindings, SLO, and the current and next signing certificates', () => {
      expect(idpMetadata).toContain(`entityID="${served.base}/saml/metadata"`);
      expect(idpMetadata).toContain(`Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${served.base}/saml/sso"`);
      expect(idpMetadata).toContain(`Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${served.base}/saml/sso"`);
      expect(idpMetadata).toContain(`Location="${served.base}/saml/slo"`);
      expect(idpMetadata.match(/<ds:X509Certificate>/g)).toHaveLength(2);
    });

    it('is the same bytes on every request (the certificates are made from the keys alone)', async () => {
      expect((await request(served.t.app).get('/saml/metadata')).text).toBe(idpMetadata);
    });
  });

  describe('registering service providers', () => {
    it('answers its id and entity id, and lists it', async () => {
      const config = sp('listed');
      const added = await register(config, { name: 'The listed app' });
      expect(added.id).toMatch(/^sp_[0-9a-f]{24}$/);
      expect(added.entity_id).toBe(config.entity_id);
      const listed = await admin('/saml/service_providers/list', {});
      fits('/saml/service_providers/list', listed.body);
      expect(listed.body.results).toContainEqual(expect.objectContaining({
        id: added.id, entity_id: config.entity_id, name: 'The listed app', assertion_consumer_services: [config.acs], single_logout_services: [config.slo], certificates: 1,
      }));
    });

    it.each([
      ['not XML', 'metadata', 'hello', /not well-formed XML/],
      ['a DOCTYPE (an entity)', 'metadata', '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="&e;"/>', /DOCTYPE/],
      ['an identity provider\'s metadata', 'metadata', '', /no SPSSODescriptor/],
    ])('refuses %s', async (_what, field, value, message) => {
      const res = await admin('/saml/service_providers/add', { [field]: value || idpMetadata });
      expect(res.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', argument_name: field });
      expect(res.body.error_description).toMatch(message);
      expect(res.body.request_id).toEqual(expect.any(String));
    });

    it('refuses an entity id the application has already, a NameID format it does not give, and attributes that are not a map', async () => {
      const config = sp('twice');
      const { xml } = await pysaml2<{ xml: string }>({ op: 'metadata', sp: config });
      expect((await admin('/saml/service_providers/add', { metadata: xml })).body.stat).toBe('ok');
      const again = await admin('/saml/service_providers/add', { metadata: xml });
      expect(again.body).toMatchObject({ error: 'invalid_argument', argument_name: 'metadata' });
      expect(again.body.error_description).toMatch(/already/);
      const format = await admin('/saml/service_providers/add', { metadata: xml, name_id_format: 'transient' });
      expect(format.body).toMatchObject({ error: 'invalid_argument', argument_name: 'name_id_format' });
      const attributes = await admin('/saml/service_providers/add', { metadata: xml, attributes: '["email"]' });
      expect(attributes.body).toMatchObject({ error: 'invalid_argument', argument_name: 'attributes' });
    });

    it('updates and removes by id; an unknown id is named', async () => {
      const added = await register(sp('changed'));
      const updated = await admin('/saml/service_providers/update', { id: added.id, name: 'Renamed', name_id_format: 'email' });
      expect(updated.body.result).toMatchObject({ name: 'Renamed', name_id_format: 'email' });
      fits('/saml/service_providers/update', updated.body);
      expect((await admin('/saml/service_providers/remove', { id: added.id })).body.stat).toBe('ok');
      const gone = await admin('/saml/service_providers/remove', { id: added.id });
      expect(gone.body).toMatchObject({ error: 'invalid_argument', argument_name: 'id' });
      const nothing = await admin('/saml/service_providers/update', { id: 'sp_000000000000000000000000' });
      expect(nothing.body).toMatchObject({ error: 'invalid_argument' });
    });

    it('needs the owner\'s credentials', async () => {
      const res = await request(served.t.app).post('/saml/service_providers/list').type('form').send({});
      expect(res.body).toMatchObject({ stat: 'error' });
    });
  });

  describe('signing in at a service provider', () => {
    let config: SpConfig;
    beforeAll(async () => {
      config = sp('app');
      await register(config, { attributes: JSON.stringify({ email: 'email', givenName: 'givenName', 'urn:oid:2.5.4.4': 'familyName' }) });
    });

    it('SP-initiated over Redirect: the hosted sign-in, then a response the service provider accepts, with the RelayState kept', async () => {
      const who = await account();
      const { made, page, asked } = await signIn(config, who.email, cookieBrowser(), { relay_state: 'back to /reports?x=1&y=2' });
      expect(asked).toBe(true);
      const verdict = await judged(config, page, [made.id]);
      expect(verdict).toMatchObject({
        ok: true, in_response_to: made.id, audience: [config.entity_id], relayState: 'back to /reports?x=1&y=2', action: config.acs,
        name_id_format: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
        authn_context: 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport',
      });
      expect(verdict.attributes).toMatchObject({ email: [who.email], givenName: ['Ada'], sn: ['Lovelace'] });
      expect(verdict.name_id).not.toContain('@');
    });

    it('single sign-on: a browser signed in is not asked again, with the same persistent NameID; ForceAuthn asks again', async () => {
      const who = await account();
      const first = await signIn(config, who.email);
      const one = await judged(config, first.page, [first.made.id]);
      const second = await signIn(config, undefined, first.browser);
      expect(second.asked).toBe(false);
      const two = await judged(config, second.page, [second.made.id]);
      expect(two).toMatchObject({ ok: true, name_id: one.name_id, session_index: one.session_index });
      const forced = await signIn(config, who.email, first.browser, { force: true });
      expect(forced.asked).toBe(true);
      expect(await judged(config, forced.page, [forced.made.id])).toMatchObject({ ok: true, name_id: one.name_id });
    });

    it('persistent NameIDs differ between service providers; email NameIDs when asked for', async () => {
      const other = sp('other');
      await register(other);
      const who = await account();
      const here = await signIn(config, who.email);
      const there = await signIn(other, undefined, here.browser);
      const a = await judged(config, here.page, [here.made.id]);
      const b = await judged(other, there.page, [there.made.id]);
      expect(a.ok && b.ok).toBe(true);
      expect(a.name_id).not.toBe(b.name_id);
      const byEmail = await signIn(other, undefined, here.browser, { nameid_format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress' });
      expect(await judged(other, byEmail.page, [byEmail.made.id])).toMatchObject({ ok: true, name_id: who.email });
    });

    it('an address never proven is never asserted: no email attribute, and an emailAddress NameID refused with InvalidNameIDPolicy', async () => {
      const who = await account(false);
      const first = await signIn(config, who.email);
      const verdict = await judged(config, first.page, [first.made.id]);
      expect(verdict.ok).toBe(true);
      expect(verdict.attributes).not.toHaveProperty('email');
      const byEmail = await signIn(config, undefined, first.browser, { nameid_format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress' });
      const refused = await judged(config, byEmail.page, [byEmail.made.id]);
      expect(refused.ok).toBe(false);
      expect(refused.error).toMatch(/InvalidNameIDPolicy/);
    });

    it('IsPassive without a session: a NoPassive status, no assertion', async () => {
      const { made, page, asked } = await signIn(config, undefined, cookieBrowser(), { passive: true });
      expect(asked).toBe(false);
      const verdict = await judged(config, page, [made.id]);
      expect(verdict.ok).toBe(false);
      expect(verdict.error).toMatch(/NoPassive/);
    });

    it('a replayed request is refused, and nothing is answered to it', async () => {
      const who = await account();
      const browser = cookieBrowser();
      const first = await signIn(config, who.email, browser);
      expect((await judged(config, first.page, [first.made.id])).ok).toBe(true);
      const again = await browser.go(first.made.url!, { stopAt: away });
      expect(again.status).toBe(400);
      expect(again.body).toMatch(/received before/);
      expect(again.body).not.toContain('SAMLResponse');
    });

    it('an ACS URL not in the metadata is refused, never answered to', async () => {
      const who = await account();
      const foreign = { ...config, acs: 'https://evil.example.net/acs' };
      const { page } = await signIn(foreign, who.email);
      expect(page.status).toBe(400);
      expect(page.body).toMatch(/AssertionConsumerServiceURL is not/);
      expect(page.body).not.toContain('evil.example.net');
    });

    it('a request of an entity that is not registered is refused', async () => {
      const { page } = await signIn(sp('stranger'), undefined);
      expect(page.status).toBe(400);
      expect(page.body).toMatch(/not a SAML service provider of this application/);
    });
  });

  describe('a service provider that signs its requests', () => {
    let signing: SpConfig;
    beforeAll(async () => {
      signing = sp('signed', { sign_requests: true });
      await register(signing);
    });

    it('signed over Redirect (the query\'s signature) and over POST (an enveloped signature) are answered', async () => {
      const who = await account();
      const redirect = await signIn(signing, who.email);
      expect((await judged(signing, redirect.page, [redirect.made.id])).ok).toBe(true);
      const post = await signIn(signing, undefined, redirect.browser, { binding: 'post' });
      expect(post.made.action).toBe(`${served.base}/saml/sso`);
      expect((await judged(signing, post.page, [post.made.id])).ok).toBe(true);
    });

    it('an unsigned request is refused when the metadata says AuthnRequestsSigned', async () => {
      const { page } = await signIn({ ...signing, sign_requests: false }, undefined);
      expect(page.status).toBe(400);
      expect(page.body).toMatch(/says its AuthnRequests are signed/);
    });

    it('a request signed by another key, or changed after signing, is refused', async () => {
      const other = await spKeys();
      try {
        const { page } = await signIn({ ...signing, key_file: other.key_file, cert_file: other.cert_file }, undefined);
        expect(page.status).toBe(400);
        expect(page.body).toMatch(/signature is not/);
      } finally {
        fs.rmSync(other.dir, { recursive: true, force: true });
      }
      const made = await pysaml2<{ url: string }>({ op: 'request', sp: signing, binding: 'redirect', relay_state: 'x' });
      const tampered = made.url.replace('RelayState=x', 'RelayState=y');
      const res = await cookieBrowser().go(tampered, { stopAt: away });
      expect(res.status).toBe(400);
    });

    it('a SHA-1 signature is refused', async () => {
      const made = await pysaml2<{ url: string }>({ op: 'request', sp: signing, binding: 'redirect' });
      const url = new URL(made.url);
      url.searchParams.set('SigAlg', 'http://www.w3.org/2000/09/xmldsig#rsa-sha1');
      const res = await cookieBrowser().go(url.toString(), { stopAt: away });
      expect(res.status).toBe(400);
      expect(res.body).toMatch(/never SHA-1/);
    });
  });

  describe('hostile requests', () => {
    const redirect = (xml: string) => `/saml/sso?SAMLRequest=${encodeURIComponent(deflateRawSync(Buffer.from(xml)).toString('base64'))}`;

    it.each([
      ['a DOCTYPE with an external entity', '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">&x;</samlp:AuthnRequest>', /DOCTYPE/],
      ['not XML', 'not xml at all', /not well-formed/],
      ['a deflate bomb', 'x'.repeat(5_000_000), /larger than/],
    ])('%s: an error page, no stack, nothing read', async (_what, xml, message) => {
      const res = await request(served.t.app).get(redirect(xml));
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/text\/html/);
      expect(res.text).toMatch(message);
      expect(res.text).not.toMatch(/at \w+ \(|root:/);
    });

    it('an IdP-initiated link with a RelayState that is another address (an open redirect at many service providers) is refused', async () => {
      const config = sp('launcher');
      const added = await register(config);
      const res = await request(served.t.app).get(`/saml/sso/init?sp=${added.id}&RelayState=${encodeURIComponent('https://evil.example/')}`);
      expect(res.status).toBe(400);
      expect(res.text).toMatch(/never another address/);
      expect((await request(served.t.app).get(`/saml/sso/init?sp=${added.id}&RelayState=${encodeURIComponent('/reports')}`)).status).toBe(303);
    });

    it('a continue link this browser does not hold is refused', async () => {
      const res = await request(served.t.app).get('/saml/sso/continue/AAAAAAAAAAAAAAAAAAAAAAAA');
      expect(res.status).toBe(400);
      expect(res.text).toMatch(/over or was started in another browser/);
    });
  });

  describe('single logout', () => {
    let config: SpConfig;
    beforeAll(async () => {
      config = sp('logout');
      await register(config);
    });

    it('a signed LogoutRequest ends the session, the LogoutResponse is signed, and the next request asks for the password', async () => {
      const who = await account();
      const { made, page, browser } = await signIn(config, who.email);
      const verdict = await judged(config, page, [made.id]);
      const logout = await pysaml2<{ id: string; url: string }>({
        op: 'logout', sp: config, name_id: verdict.name_id, name_id_format: verdict.name_id_format, session_index: verdict.session_index, relay_state: 'bye',
      });
      const answered = await browser.go(logout.url, { stopAt: away });
      const back = new URL(answered.url);
      expect(`${back.origin}${back.pathname}`).toBe(config.slo);
      const logoutVerdict = await pysaml2({ op: 'logout_response', sp: config, query: back.search.slice(1) });
      expect(logoutVerdict).toMatchObject({
        ok: true, status: 'urn:oasis:names:tc:SAML:2.0:status:Success', in_response_to: logout.id,
      });
      expect(back.searchParams.get('RelayState')).toBe('bye');
      const next = await signIn(config, undefined, browser);
      expect(next.asked).toBe(true);
    });

    it('an unsigned LogoutRequest is refused and ends nothing', async () => {
      const who = await account();
      const { made, page, browser } = await signIn(config, who.email);
      const verdict = await judged(config, page, [made.id]);
      const logout = await pysaml2<{ url: string }>({ op: 'logout', sp: config, name_id: verdict.name_id, name_id_format: verdict.name_id_format, sign: false });
      const res = await browser.go(logout.url, { stopAt: away });
      expect(res.status).toBe(400);
      expect(res.body).toMatch(/must be signed/);
      expect((await signIn(config, undefined, browser)).asked).toBe(false);
    });
  });

  describe('key rotation', () => {
    it('the next certificate, published ahead, signs after keys:rotate: a service provider holding the metadata of before accepts it', async () => {
      const config = sp('rotation');
      await register(config);
      const certificates = (xml: string) => [...xml.matchAll(/<ds:X509Certificate>([^<]+)</g)].map((m) => m[1]);
      const [current, next] = certificates(idpMetadata);
      const app = (await served.t.runtime.db.applications.findByName('local'))!;
      await rotateSigningKeys(served.t.runtime.services, {
        applicationId: app.id, applicationName: 'local', acting: { actor: { kind: 'operator', name: 'test' }, origin: {} }, force: true,
      });
      const after = certificates((await request(served.t.app).get('/saml/metadata')).text);
      expect(after[0]).toBe(next);
      expect(after).not.toContain(current);
      const who = await account();
      const { made, page } = await signIn(config, who.email);
      const posted = Buffer.from(postedResponse(page.body).samlResponse, 'base64').toString();
      expect(posted).toContain(`<ds:X509Certificate>${next}</ds:X509Certificate>`);
      // the service provider still holds the metadata fetched before the rotation (config.idp_metadata)
      expect(await judged(config, page, [made.id])).toMatchObject({ ok: true });
    });
  });
});
