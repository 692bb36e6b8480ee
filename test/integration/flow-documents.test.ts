import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { FLOWS, startTestApp, type TestApp, importFlowsInto } from '../helpers/backend';

let t: TestApp;
let loginId: string;
type Doc = { version: string; fields: Record<string, { type: string; fields?: string[]; schemaId?: string; label?: string; validation?: { rule: string; message: string }[] }> };
const get = (path: string) => request(t.app).get(path);

beforeAll(async () => {
  t = await startTestApp();
  loginId = t.local.clients.login.client_id;
});
afterAll(() => t.close());

/** CaptureFlowUtils.getTraditionalSignInCredentials (Android): the sign-in form's two fields, the password by type. */
function signInCredentials(flow: Doc, formName: string, user: string, password: string): Record<string, string> {
  const names = flow.fields[formName].fields!;
  const passwordName = names.find((n) => flow.fields[n].type === 'password')!;
  const userName = names.find((n) => flow.fields[n].type !== 'password')!;
  return { [passwordName]: password, [userName]: user };
}

/** CaptureFlowUtils.getFormFields (Android): every field of the form with a schemaId, from the user object; dates as dateselect parts. */
function formFields(flow: Doc, formName: string, user: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of flow.fields[formName].fields!) {
    const field = flow.fields[name];
    const value = field.schemaId === undefined ? undefined : user[field.schemaId];
    if (value === undefined) continue;
    if (field.type === 'dateselect') {
      const [y, m, d] = value.split('-');
      Object.assign(out, { [`${name}[dateselect_year]`]: y, [`${name}[dateselect_month]`]: m, [`${name}[dateselect_day]`]: d });
    } else {
      out[name] = value;
    }
  }
  return out;
}

describe('/widget_data/flows/{app}/{flow}/{version}/{locale}.json (the mobile SDKs\' flow download)', () => {
  it('serves a stored flow version in the widget format, localized, cacheable for good', async () => {
    const res = await get('/widget_data/flows/local/standard/1/en-US.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const flow = res.body as Doc;
    expect(flow.version).toBe('1'); // a string: the SDKs refuse anything else
    expect(flow.fields.signInForm.fields).toEqual(['signInEmailAddress', 'currentPassword']);
    expect(flow.fields.emailAddress).toMatchObject({ type: 'email', schemaId: 'email', label: expect.any(String) });
    expect(flow.fields.newPasswordConfirm).toMatchObject({ type: 'password', schemaId: 'password' });
    expect(flow.fields.birthdate).toMatchObject({ type: 'dateselect', schemaId: 'birthdate' });
    expect(flow.fields.emailAddress.validation!.find((r) => r.rule === 'required')!.message).not.toMatch(/\.required$/);

    const etag = res.headers.etag;
    expect(etag).toBeTruthy();
    const again = await get('/widget_data/flows/local/standard/1/en-US.json').set('If-None-Match', etag);
    expect(again.status).toBe(304);

    const fr = (await get('/widget_data/flows/local/standard/1/fr-FR.json')).body as Doc;
    expect(fr.fields.emailAddress.label).not.toBe(flow.fields.emailAddress.label);
    expect(fr.fields.signInForm.fields).toEqual(flow.fields.signInForm.fields);
  });

  it('HEAD names the newest version, cached for a minute', async () => {
    expect((await get('/widget_data/flows/local/standard/HEAD/en-US.json')).body.version).toBe('1');
    // the same flow again is no new version; a changed one is
    expect(await importFlowsInto(t.runtime, 'local', `${FLOWS}/standard`)).toEqual([{ name: 'standard', version: 1, unchanged: true }]);
    const changed = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-flow-'));
    fs.cpSync(`${FLOWS}/standard`, changed, { recursive: true });
    const translations = JSON.parse(fs.readFileSync(path.join(changed, 'translations.json'), 'utf8'));
    translations['emailAddress.label'].values['en-US'] = 'Your email';
    fs.writeFileSync(path.join(changed, 'translations.json'), JSON.stringify(translations));
    await importFlowsInto(t.runtime, 'local', changed);
    fs.rmSync(changed, { recursive: true, force: true });
    const head = await get('/widget_data/flows/local/standard/HEAD/en-US.json');
    expect(head.body.version).toBe('2');
    expect(head.headers['cache-control']).toBe('public, max-age=60');
    expect(head.body.fields.emailAddress.label).toBe('Your email');
    expect((await get('/widget_data/flows/local/standard/1/en-US.json')).body.version).toBe('1');
  });

  it.each([
    '/widget_data/flows/nosuchapp/standard/1/en-US.json',
    '/widget_data/flows/local/nosuchflow/1/en-US.json',
    '/widget_data/flows/local/standard/99/en-US.json',
    '/widget_data/flows/local/standard/1/it-IT.json',
    '/widget_data/flows/local/standard/latest/en-US.json',
    '/widget_data/flows/local/standard/1/en-US.xml',
    "/widget_data/flows/local/standard/1/'%20OR%201=1.json",
  ])('%s → 404 with the error body', async (path) => {
    const res = await get(path);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.body).toMatchObject({ stat: 'error', error_description: expect.any(String), request_id: expect.any(String) });
  });

  it('the SDKs build working calls from it: sign-in credentials and a registration from a user object', async () => {
    const flow = (await get('/widget_data/flows/local/standard/1/en-US.json')).body as Doc;
    const shared = { client_id: loginId, locale: 'en-US', flow: 'standard', flow_version: flow.version, response_type: 'token', redirect_uri: 'https://app.example.com/done' };
    const user = { email: 'sdk@example.com', password: 'correct horse battery', givenName: 'Sdk', familyName: 'User', displayName: 'sdk', birthdate: '1990-04-01' };
    // Capture.registerNewUser: the form's fields, form, flow, flow_version from the document, refresh_secret
    const registered = await request(t.app).post('/oauth/register_native_traditional').type('form')
      .send({ ...shared, form: 'registrationForm', refresh_secret: 'c0ffee'.repeat(7).slice(0, 40), ...formFields(flow, 'registrationForm', user) });
    // what SignInResultHandler reads: capture_user (an object) and access_token
    expect(registered.body).toMatchObject({ stat: 'ok', access_token: expect.any(String), capture_user: { email: 'sdk@example.com', givenName: 'Sdk', birthdate: '1990-04-01' } });
    const signedIn = await request(t.app).post('/oauth/auth_native_traditional').type('form')
      .send({ ...shared, form: 'signInForm', ...signInCredentials(flow, 'signInForm', 'sdk@example.com', 'correct horse battery') });
    expect(signedIn.body.stat).toBe('ok');
  });
});
