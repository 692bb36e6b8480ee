import fs from 'node:fs';
import http from 'node:http';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { basic, skipUnless } from '../helpers/backend';
import { CHROMIUM, launchChromium, servedTestApp } from '../helpers/browser';
import { freePort } from '../helpers/processes';
import { pysaml2, pysaml2Idp, SAML_PEERS, spKeys, stopPysaml2 } from '../helpers/saml';

/**
 * Enterprise sign-in in a real browser (Chromium): an organization's identity provider on another
 * site (127.0.0.1, where Gatehouse is localhost) answers with the auto-posting form identity
 * providers use, so the response reaches the ACS URL as a cross-site POST, which carries none of
 * the browser's SameSite=Lax cookies; home-realm discovery from the typed address; required sign-in;
 * and Gatehouse's own identity provider answering a SAML service provider over both bindings.
 */

/** An identity provider's site: /sso reads the AuthnRequest (pysaml2) and answers with a page that posts the response to the ACS URL by itself. */
function identityProviderSite(idp: () => Record<string, string>, email: () => string): http.Server {
  return http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/sso') return void res.writeHead(404).end();
    const answer = await pysaml2Idp<{ acs: string; saml_response: string; relay_state: string }>({
      op: 'respond', idp: idp(), query: url.search.slice(1), identity: { givenName: ['Katherine'], sn: ['Johnson'] },
      name_id: { format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', text: email() },
    });
    const esc = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><html><body onload="document.forms[0].submit()">'
      + `<form method="post" action="${esc(answer.acs)}"><input type="hidden" name="SAMLResponse" value="${esc(answer.saml_response)}">`
      + `<input type="hidden" name="RelayState" value="${esc(answer.relay_state)}"></form></body></html>`);
  });
}

skipUnless(fs.existsSync(CHROMIUM) && SAML_PEERS, `the SAML browser test needs Chromium at ${CHROMIUM} and pysaml2 with xmlsec1 (apt-get install chromium python3-pysaml2 xmlsec1)`)('enterprise sign-in in a real browser', () => {
  let served: Awaited<ReturnType<typeof servedTestApp>>;
  let keys: Awaited<ReturnType<typeof spKeys>>;
  let site: http.Server;
  let browser: Browser;
  let idp: Record<string, string>;
  let who = '';
  let orgId = '';
  let domain = '';
  const admin = (path: string, body: Record<string, string>) => request(served.t.app).post(path)
    .set('Authorization', basic(served.t.local.clients.owner.client_id, served.t.local.clients.owner.client_secret)).type('form').send(body);

  beforeAll(async () => {
    keys = await spKeys();
    served = await servedTestApp({ host: 'localhost' });
    const port = await freePort();
    site = identityProviderSite(() => idp, () => who);
    await new Promise<void>((resolve) => site.listen(port, '127.0.0.1', resolve));
    domain = `acme-${Math.random().toString(36).slice(2, 8)}.example`;
    orgId = (await admin('/organizations/create', { name: 'Acme', slug: domain.replace(/\./g, '-') })).body.id;
    await admin('/organizations/domains/add', { organization_id: orgId, domain, verified: 'true' });
    const partial = { entity_id: `http://127.0.0.1:${port}/idp`, sso: `http://127.0.0.1:${port}/sso`, key_file: keys.key_file, cert_file: keys.cert_file };
    const { xml } = await pysaml2Idp<{ xml: string }>({ op: 'metadata', idp: partial });
    const added = await admin('/organizations/connections/add', { organization_id: orgId, type: 'saml', metadata: xml, name: 'Acme Okta', required: 'true' });
    expect(added.body.stat).toBe('ok');
    idp = { ...partial, sp_metadata: (await request(served.t.app).get(new URL(added.body.metadata_url).pathname)).text };
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await stopPysaml2();
    if (site) await new Promise<void>((resolve) => site.close(() => resolve()));
    await served?.close();
    if (keys) fs.rmSync(keys.dir, { recursive: true, force: true });
  });

  it('the address typed on the hosted sign-in goes to the organization\'s identity provider, whose cross-site POST signs the person in to the account page', async () => {
    who = `katherine@${domain}`;
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${served.base}/account`);
    await page.waitForURL(/\/signin\?/);
    await page.click('text=Sign in with your organization');
    await page.waitForURL(/\/signin\/organization\?/);
    await page.fill('input[type=email]', who);
    await page.click('button[type=submit]');
    await page.waitForURL(new RegExp(`^${served.base}/account(\\?|$)`));
    expect(await page.textContent('main')).toContain(who);
    await context.close();
  }, 60_000);

  it('required sign-in: a member who also has a password is refused it, with the connection named', async () => {
    const email = `contractor-${Math.random().toString(36).slice(2, 8)}@elsewhere.example`;
    const made = await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: 'correct horse battery' }) });
    await admin('/organizations/members/add', { organization_id: orgId, uuid: made.body.uuid, roles: 'member' });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${served.base}/account`);
    await page.waitForURL(/\/signin\?/);
    await page.fill('input[type=email]', email);
    await page.fill('input[type=password]', 'correct horse battery');
    await page.click('button[type=submit]');
    await page.waitForLoadState();
    expect(await page.textContent('main')).toContain('Acme Okta');
    expect(new URL(page.url()).pathname).toBe('/signin');
    await context.close();
  }, 60_000);

  it('Gatehouse as the identity provider: a service provider\'s POST-binding request from another site, the hosted sign-in, and the response it accepts', async () => {
    const spKeysOf = await spKeys();
    try {
      const idpMetadata = (await request(served.t.app).get('/saml/metadata')).text;
      const sp = { entity_id: 'http://127.0.0.1:1/sp', acs: 'http://127.0.0.1:1/acs', slo: 'http://127.0.0.1:1/slo', key_file: spKeysOf.key_file, cert_file: spKeysOf.cert_file, idp_metadata: idpMetadata, sign_requests: true };
      const { xml } = await pysaml2<{ xml: string }>({ op: 'metadata', sp });
      expect((await admin('/saml/service_providers/add', { metadata: xml })).body.stat).toBe('ok');
      const email = `sp-user-${Math.random().toString(36).slice(2, 8)}@elsewhere.example`;
      await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: 'correct horse battery' }) });
      const made = await pysaml2<{ id: string; action: string; fields: Record<string, string> }>({ op: 'request', sp, binding: 'post', relay_state: 'r1' });
      const context = await browser.newContext();
      const page = await context.newPage();
      // the service provider's page on its own site posts the request, as a browser would
      await page.route('http://127.0.0.1:1/**', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<p>the service provider</p>' }));
      await page.goto('http://127.0.0.1:1/start');
      await page.setContent(`<form method="post" action="${made.action}">${Object.entries(made.fields).map(([k, v]) => `<input type="hidden" name="${k}" value="${v.replace(/"/g, '&quot;')}">`).join('')}</form>`);
      await page.evaluate('document.forms[0].submit()');
      await page.waitForURL(/\/signin\?/);
      await page.fill('input[type=email]', email);
      await page.fill('input[type=password]', 'correct horse battery');
      const posted = page.waitForRequest((r) => r.url() === 'http://127.0.0.1:1/acs' && r.method() === 'POST');
      await page.click('button[type=submit]');
      const body = new URLSearchParams((await posted).postData() ?? '');
      const verdict = await pysaml2<{ ok: boolean; name_id: string }>({ op: 'response', sp, saml_response: body.get('SAMLResponse'), outstanding: [made.id] });
      expect(verdict.ok).toBe(true);
      expect(body.get('RelayState')).toBe('r1');
      await context.close();
    } finally {
      fs.rmSync(spKeysOf.dir, { recursive: true, force: true });
    }
  }, 60_000);
});
