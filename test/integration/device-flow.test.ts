import { manualClock } from '../helpers/backend';
import { servedTestApp } from '../helpers/browser';
import { APP, oidcSignIn, PASSWORD } from '../helpers/oidc-sign-in';
import { cookieBrowser, firstForm } from '../helpers/social';
import { stored } from '../helpers/stored';
import { BUDGET_KEYS } from '../../src/domain/budget-keys';
import { DEVICE_CODES_PER_APPLICATION, DEVICE_MISSES_UNDER_ATTACK, DEVICE_SLOWED } from '../../src/usecases/oidc/device-codes';

// The device authorization grant (RFC 8628, docs/openid-connect.md#devices) with openid-client 6 as
// the device: its code typed on /oidc/device (any case, with or without the dash), the sign-in, the
// confirmation, the tokens polled; a wrong code refused and counted; a disabled account's device
// gets nothing; the device and user codes stored as hashes.

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const clock = manualClock();
let served: Awaited<ReturnType<typeof servedTestApp>>;
let s: ReturnType<typeof oidcSignIn>;

beforeAll(async () => {
  // behind a proxy of loopback: a test names the client's address with x-forwarded-for
  served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '12/900', TRUST_PROXY: 'loopback' } });
  s = oidcSignIn(served, clock);
  for (const [key, value] of [['grant_types', `authorization_code refresh_token ${DEVICE_GRANT}`], ['redirect_uris', APP]]) {
    expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key, value })).body.stat).toBe('ok');
  }
  clock.advance(5_100);
});
afterAll(() => served?.close());

/** The person's side: the code typed on the verification page, signed in with the password, the device confirmed; answers the last page. */
async function approve(userCode: string, email: string, browser = cookieBrowser()) {
  let page = await browser.go(`${served.base}/oidc/device`);
  expect(page.body).toContain('name="user_code"');
  const input = firstForm(page.body, page.url);
  page = await browser.go(input.action, { method: 'POST', form: { ...input.fields, user_code: userCode } });
  if (!page.body.includes('name="confirm"')) return page;
  const confirm = firstForm(page.body, page.url);
  page = await browser.go(confirm.action, { method: 'POST', form: { ...confirm.fields, confirm: 'yes' } });
  if (new URL(page.url).pathname === '/signin') {
    const form = firstForm(page.body, page.url);
    page = await browser.go(form.action, { method: 'POST', form: { ...form.fields, signInEmailAddress: email, currentPassword: PASSWORD } });
  }
  return page;
}

it('a device signs in: the code typed in lower case without its dash, the password, the confirmation; the tokens polled are the account\'s', async () => {
  const a = await s.account();
  const config = await s.discovered();
  expect(config.serverMetadata().device_authorization_endpoint).toBe(`${served.base}/oidc/device/auth`);
  const response = await s.oidc.initiateDeviceAuthorization(config, { scope: 'openid email offline_access' });
  expect(response).toMatchObject({ verification_uri: `${served.base}/oidc/device`, user_code: expect.stringMatching(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/) });
  // stored as hashes only
  const rows = await stored(served.t.runtime.db).rows<{ kind: string; value_hash: string; extra: string }>('SELECT kind, value_hash, extra FROM credentials WHERE kind IN (?, ?)', ['oidc_device_code', 'oidc_user_code']);
  expect(rows.map((r) => r.kind).sort()).toEqual(['oidc_device_code', 'oidc_user_code']);
  expect(JSON.stringify(rows)).not.toContain(response.device_code);
  expect(JSON.stringify(rows)).not.toContain(response.user_code.replace('-', ''));

  const polled = s.oidc.pollDeviceAuthorizationGrant(config, response);
  const done = await approve(response.user_code.toLowerCase().replace('-', ''), a.email);
  expect(done.body).toContain('Your device is signed in');
  const tokens = await polled;
  expect(tokens.claims()).toMatchObject({ sub: a.uuid, amr: ['pwd'] });
  // nothing of the provider's state (its interaction named the device code) holds either code in clear
  const state = await stored(served.t.runtime.db).rows('SELECT payload FROM oidc_state');
  expect(JSON.stringify(state)).not.toContain(response.device_code);
  expect(JSON.stringify(state)).not.toContain(response.user_code.replace('-', ''));
  // once confirmed, the device code names the account and the grant (ended with the account's sessions)
  const [confirmed] = await stored(served.t.runtime.db).rows<{ entity_id: number | null; family: string | null }>('SELECT entity_id, family FROM credentials WHERE kind = ? ORDER BY id DESC LIMIT 1', ['oidc_device_code']);
  expect(confirmed.entity_id).not.toBeNull();
  expect(confirmed.family).not.toBeNull();
  expect(tokens.refresh_token).toEqual(expect.any(String));
  expect(await s.oidc.fetchUserInfo(config, tokens.access_token, a.uuid)).toMatchObject({ sub: a.uuid, email: a.email });
  // the device code works once, and its redemption is an event of the account's
  await expect(s.oidc.genericGrantRequest(config, DEVICE_GRANT, { device_code: response.device_code })).rejects.toMatchObject({ error: 'invalid_grant' });
  const app = (await served.t.runtime.db.applications.findByName('local'))!;
  const events = await served.t.runtime.db.events.latest(app.id, 50);
  expect(events.filter((e) => e.type === 'oidc.device_code_redeemed').map((e) => e.subject)).toContainEqual({ kind: 'record', id: String(confirmed.entity_id) });
}, 60_000);

it('a login client made by the API signs its device in: it has the application\'s flow from the start', async () => {
  const added = await s.admin('/clients/add', { description: 'a TV app', features: '["login_client"]' });
  expect(added.body.stat).toBe('ok');
  for (const [key, value] of [['grant_types', `authorization_code refresh_token ${DEVICE_GRANT}`], ['redirect_uris', APP]]) {
    expect((await s.admin('/settings/set', { for_client_id: added.body.client_id as string, key, value })).body.stat).toBe('ok');
  }
  clock.advance(5_100);
  const a = await s.account();
  const config = await s.oidc.discovery(new URL(served.base), added.body.client_id as string, added.body.client_secret as string, undefined, { execute: [s.oidc.allowInsecureRequests] });
  const response = await s.oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
  const polled = s.oidc.pollDeviceAuthorizationGrant(config, response);
  const done = await approve(response.user_code, a.email);
  expect(done.body).toContain('Your device is signed in');
  expect((await polled).claims()).toMatchObject({ sub: a.uuid, aud: added.body.client_id });
});

it('a disabled account\'s device gets nothing: approved, then disabled before it polls', async () => {
  const a = await s.account();
  const config = await s.discovered();
  const response = await s.oidc.initiateDeviceAuthorization(config, { scope: 'openid offline_access' });
  const done = await approve(response.user_code, a.email);
  expect(done.body).toContain('Your device is signed in');
  const record = await s.admin('/entity', { type_name: 'user', uuid: a.uuid });
  expect((await s.admin('/entity.disable', { type_name: 'user', id: String(record.body.result.id) })).body.stat).toBe('ok');
  await expect(s.oidc.genericGrantRequest(config, DEVICE_GRANT, { device_code: response.device_code })).rejects.toMatchObject({ error: 'invalid_grant' });
}, 60_000);

it('the person refuses: the device is told access_denied', async () => {
  const config = await s.discovered();
  const response = await s.oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
  const browser = cookieBrowser();
  let page = await browser.go(`${served.base}/oidc/device`);
  const input = firstForm(page.body, page.url);
  page = await browser.go(input.action, { method: 'POST', form: { ...input.fields, user_code: response.user_code } });
  expect(page.body).toContain(`with the code ${response.user_code}`);
  const refuse = firstForm(page.body.slice(page.body.indexOf('</form>') + 7), page.url);
  page = await browser.go(refuse.action, { method: 'POST', form: { ...refuse.fields, abort: 'yes' } });
  expect(page.body).toContain('Nothing was signed in');
  await expect(s.oidc.genericGrantRequest(config, DEVICE_GRANT, { device_code: response.device_code })).rejects.toMatchObject({ error: 'access_denied' });
});

it('a form posted without the provider\'s session (a crawler, cookies blocked, an expired page) gets the device page saying the form expired, with a fresh form; never 500', async () => {
  const post = (body: string, cookie?: string) => fetch(`${served.base}/oidc/device`, {
    method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie && { cookie }) }, body,
  });
  for (const body of ['user_code=BCDF-GHJK&xsrf=abc', 'user_code=BCDF-GHJK', '', 'confirm=yes&user_code=BCDF-GHJK']) {
    const res = await post(body);
    const page = await res.text();
    expect({ body, status: res.status }).toEqual({ body, status: 400 });
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(page).toContain('This form has expired');
    expect(page).not.toContain('That code is not one we know');
    // a fresh form: its token works for the next post, from a session of its own
    expect(page).toMatch(/name="xsrf" value="[0-9a-f]{48}"/);
  }
  // a wrong token with a live session says the same
  const browser = cookieBrowser();
  const page = await browser.go(`${served.base}/oidc/device`);
  const form = firstForm(page.body, page.url);
  const wrong = await browser.go(form.action, { method: 'POST', form: { ...form.fields, xsrf: 'not-the-token', user_code: 'BCDF-GHJK' } });
  expect(wrong.body).toContain('This form has expired');
  // the fresh form works: its token and its session's cookie take the code
  const fresh = await fetch(`${served.base}/oidc/device`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'user_code=BCDF-GHJK' });
  const cookie = fresh.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const xsrf = /name="xsrf" value="([0-9a-f]{48})"/.exec(await fresh.text())![1];
  const again = await post(`xsrf=${xsrf}&user_code=BCDF-GHJK`, cookie);
  const answered = await again.text();
  expect(answered).not.toContain('This form has expired');
  expect(answered).toContain('That code is not one we know');
});

it('a wrong code is refused on the page, kept as typed, and counted: past the address\'s budget each code waits its turn', async () => {
  // an address of its own: the budget counts this test's codes only
  const browser = cookieBrowser({ 'x-forwarded-for': '192.0.2.44' });
  let page = await browser.go(`${served.base}/oidc/device`);
  let form = firstForm(page.body, page.url);
  page = await browser.go(form.action, { method: 'POST', form: { ...form.fields, user_code: 'BCDF-GHJK' } });
  expect(page.status).toBe(400);
  expect(page.body).toContain('That code is not one we know');
  expect(page.body).toContain('value="BCDF-GHJK"');
  // the budget: LOGIN_LIMIT_ADDRESS (12 here) codes typed from one address, at once; then each waits its turn
  const times: number[] = [];
  for (let i = 0; i < 13; i++) {
    form = firstForm(page.body.includes('name="user_code"') ? page.body : (await browser.go(`${served.base}/oidc/device`)).body, `${served.base}/oidc/device`);
    // the provider's paths match in any case and with a trailing slash: they are counted the same
    const path = [`${form.action}/`, form.action.replace('/device', '/DEVICE')][i % 2];
    const started = Date.now();
    page = await browser.go(path, { method: 'POST', form: { ...form.fields, user_code: 'XXXX-XXXX' } });
    times.push(Date.now() - started);
    expect(page.status).toBe(400);
  }
  // within the budget nothing waits (the median, as one request may be slow on a busy machine)
  expect([...times.slice(0, 11)].sort((x, y) => x - y)[5]).toBeLessThan(DEVICE_SLOWED.delayMs / 2);
  expect(times[12]).toBeGreaterThanOrEqual(DEVICE_SLOWED.delayMs - 50);
});


it('a guessing attack on the whole application never stops a right code: an address that typed wrong codes is slowed, never refused its right one', async () => {
  // the application's tally of wrong codes past its mark, as 1,000 wrong codes from many addresses leave it
  const app = (await served.t.runtime.db.applications.findByName('local'))!;
  for (let i = 0; i < DEVICE_CODES_PER_APPLICATION.max; i++) {
    await served.t.runtime.services.rateLimiter.take([[BUDGET_KEYS.deviceApplication(app.id), { max: 1e9, windowSeconds: 900 }]]);
  }
  // the person, typing the right code from an address that typed no wrong one: served
  const a = await s.account();
  const config = await s.discovered();
  const response = await s.oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
  const polled = s.oidc.pollDeviceAuthorizationGrant(config, response);
  const done = await approve(response.user_code, a.email, cookieBrowser({ 'x-forwarded-for': '203.0.113.7' }));
  expect(done.body).toContain('Your device is signed in');
  expect((await polled).claims()).toMatchObject({ sub: a.uuid });
  // an address that typed a few wrong codes (a guesser, or someone sharing its address): past them, each
  // code typed waits its turn, and is still looked up
  const shared = cookieBrowser({ 'x-forwarded-for': '198.51.100.9' });
  const typed: { status: number; ms: number }[] = [];
  for (let i = 0; i < DEVICE_MISSES_UNDER_ATTACK.max + 1; i++) {
    const page = await shared.go(`${served.base}/oidc/device`);
    const form = firstForm(page.body, page.url);
    const started = Date.now();
    typed.push({ status: (await shared.go(form.action, { method: 'POST', form: { ...form.fields, user_code: 'XXXX-XXXX' } })).status, ms: Date.now() - started });
  }
  expect(typed.map((t) => t.status)).toEqual(Array(DEVICE_MISSES_UNDER_ATTACK.max + 1).fill(400));
  expect(typed[DEVICE_MISSES_UNDER_ATTACK.max].ms).toBeGreaterThanOrEqual(DEVICE_SLOWED.delayMs - 50);
  // the right code from that address: slowed, and honoured
  const b = await s.account();
  const second = await s.oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
  const secondPolled = s.oidc.pollDeviceAuthorizationGrant(config, second);
  expect((await approve(second.user_code, b.email, shared)).body).toContain('Your device is signed in');
  expect((await secondPolled).claims()).toMatchObject({ sub: b.uuid });
  // a flood from one address: one lookup at a time, and past a few waiting the page says how long to wait
  // (the forms fetched first, then the codes sent together: they arrive within the first one's wait)
  const forms = await Promise.all(Array.from({ length: DEVICE_SLOWED.waiting + 2 }, async () => {
    const guesser = cookieBrowser({ 'x-forwarded-for': '198.51.100.9' });
    const page = await guesser.go(`${served.base}/oidc/device`);
    return { guesser, form: firstForm(page.body, page.url) };
  }));
  const flood = await Promise.all(forms.map(({ guesser, form }) => guesser.go(form.action, { method: 'POST', form: { ...form.fields, user_code: 'XXXX-XXXX' } })));
  const refused = flood.filter((p) => p.status === 429);
  expect(refused.length).toBeGreaterThanOrEqual(2);
  expect(refused[0].body).toContain('Too many codes were tried from here');
  expect(flood.filter((p) => p.status === 400).length).toBeGreaterThanOrEqual(1);
}, 90_000);
