import type { ParsedMail } from 'mailparser';
import request from 'supertest';
import { mailsTo as mailsWritten } from '../helpers/mail-files';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';

// Changing the email address moves the account's recovery to the new address: it needs the same
// proof as a new password, leaves the new address unverified, and the old address is told with a
// link that undoes the change and ends every session.

const clock = manualClock();
let t: TestApp;
let owner: string;
let loginId: string;
let recoverUrl: string;

const post = (p: string, body: Record<string, string>, headers: Record<string, string> = {}) => request(t.app).post(p).type('form').set(headers).send(body);
const shared = (extra: Record<string, string> = {}) => ({ client_id: loginId, locale: 'en-US', ...extra });
const register = (email: string, locale = 'en-US') => post('/oauth/register_native_traditional', shared({
  locale, emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada',
}));
const signIn = async (email: string, password = 'correct horse battery') =>
  (await post('/oauth/auth_native_traditional', shared({ signInEmailAddress: email, currentPassword: password }))).body;
const editEmail = (accessToken: string, email: string, locale = 'en-US') => post('/oauth/update_profile_native', shared({
  locale, access_token: accessToken, form: 'editProfileForm', emailAddress: email, firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada',
}));
const forgot = (email: string) => post('/oauth/forgot_password_native', shared({ redirect_uri: recoverUrl, signInEmailAddress: email }));
const byOwner = async (email: string) =>
  (await request(t.app).get('/entity').set('Authorization', owner).query({ type_name: 'user', key_attribute: 'email', key_value: JSON.stringify(email) })).body;
/** Five minutes and a second: every token issued before is no longer fresh proof of a sign-in. */
const stale = () => clock.advance(301_000);

const mailsTo = (to: string) => mailsWritten(t.runtime, to);
const linkIn = (mail: ParsedMail) => new URL(mail.text!.match(/https?:\/\/\S+/)![0]);

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ACCOUNT: '1000/600', MAIL_LIMIT_RECIPIENT: '1000/3600', MAIL_LIMIT_ADDRESS: '100000/3600' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  loginId = t.local.clients.login.client_id;
  recoverUrl = (await request(t.app).get('/settings/items').query({ for_client_id: loginId }).set('Authorization', owner)).body.result.password_recover_url;
});
afterAll(() => t.close());

describe('a stolen access token cannot take the account over through its email', () => {
  it('a token older than five minutes cannot change the address in the flow, so the reset link never reaches the attacker', async () => {
    await register('victim@example.com');
    const { access_token: token } = await signIn('victim@example.com');
    stale();
    const res = await editEmail(token, 'attacker@example.com');
    expect(res.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', argument_name: 'form', request_id: expect.any(String) });
    expect(res.body.error_description).toMatch(/changes the email address.*sign-in within the last 5 minutes/);
    expect((await byOwner('victim@example.com')).result.email).toBe('victim@example.com');
    expect((await forgot('attacker@example.com')).body).toMatchObject({ code: 212, error: 'no_such_account' });
    expect(await mailsTo('attacker@example.com')).toHaveLength(0);
    expect((await signIn('victim@example.com')).access_token).toEqual(expect.any(String));
  });

  it('a token minted by /access/getAccessToken is no proof either', async () => {
    await register('minted@example.com');
    const { result } = await byOwner('minted@example.com');
    const minted = await request(t.app).get('/access/getAccessToken').set('Authorization', owner).query({ type_name: 'user', uuid: result.uuid });
    expect((await editEmail(minted.body.accessToken, 'attacker2@example.com')).body).toMatchObject({ code: 200, argument_name: 'form' });
    const api = await post('/entity.update', { access_token: minted.body.accessToken, attribute_name: 'email', value: '"attacker2@example.com"' });
    expect(api.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'attributes.email' });
    expect(api.body.error_description).toMatch(/sign-in within the last 5 minutes/);
    expect((await byOwner('minted@example.com')).result.email).toBe('minted@example.com');
  });

  it("a record's own token never deletes or blanks its address, fresh or not", async () => {
    await register('keep@example.com');
    const { access_token: token } = await signIn('keep@example.com');
    const deleted = await post('/entity.delete', { access_token: token, attribute_name: 'email' });
    expect(deleted.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'attributes.email' });
    expect(deleted.body.error_description).toMatch(/cannot be removed with an access token/);
    const blanked = await post('/entity.update', { access_token: token, attributes: JSON.stringify({ email: null }) });
    expect(blanked.body).toMatchObject({ code: 200, argument_name: 'attributes.email' });
    expect((await byOwner('keep@example.com')).result.email).toBe('keep@example.com');
  });

  it("the original clients' profile edit, which sends the address unchanged (or in other letter case), needs no fresh token", async () => {
    await register('same@example.com');
    const { access_token: token } = await signIn('same@example.com');
    await request(t.app).get('/access/useVerificationCode').query({
      verification_code: linkIn((await mailsTo('same@example.com'))[0]).searchParams.get('verification_code')!,
    });
    stale();
    expect((await editEmail(token, 'same@example.com')).body).toEqual({ stat: 'ok' });
    expect((await editEmail(token, 'Same@Example.com')).body).toEqual({ stat: 'ok' });
    const { result } = await byOwner('same@example.com');
    expect(result.emailVerified).not.toBeNull();
    expect((await mailsTo('same@example.com')).map((m) => m.subject)).toEqual(['Welcome to Gatehouse']);
  });
});

describe('a change with proof', () => {
  it('leaves the new address unverified, tells the old one in its language, and the undo link puts it back and ends every session', async () => {
    await register('zoe@example.com', 'fr-FR');
    const welcome = (await mailsTo('zoe@example.com'))[0];
    const { access_token: first } = await signIn('zoe@example.com');
    const verified = await request(t.app).get('/access/useVerificationCode').query({ verification_code: linkIn(welcome).searchParams.get('verification_code')! });
    expect(verified.body.stat).toBe('ok');
    // a second verification link, mailed to the old address before the change, must not verify the new one
    await post('/oauth/verify_email_native', shared({ redirect_uri: 'https://app.example.com/', signInEmailAddress: 'zoe@example.com' }));
    expect(await mailsTo('zoe@example.com')).toHaveLength(1); // already verified: nothing sent
    const { access_token: fresh, refresh_token: refresh } = (await post('/oauth/auth_native_traditional', shared({
      signInEmailAddress: 'zoe@example.com', currentPassword: 'correct horse battery', response_type: 'code_and_token', redirect_uri: 'https://app.example.com/',
    }))).body;
    expect(fresh).toEqual(expect.any(String));

    expect((await editEmail(fresh, 'zoe.new@example.com', 'fr-FR')).body).toEqual({ stat: 'ok' });
    const now = (await byOwner('zoe.new@example.com')).result;
    expect(now.email).toBe('zoe.new@example.com');
    expect(now.emailVerified).toBeNull();

    const notice = (await mailsTo('zoe@example.com')).find((m) => m.subject?.includes('a été modifiée'))!;
    expect(notice).toBeDefined();
    expect(notice.text).toContain('zoe.new@example.com');
    const undo = linkIn(notice);
    expect(undo.pathname).toBe('/undo-email-change');
    expect(await mailsTo('zoe.new@example.com')).toHaveLength(0);

    // a mail scanner's GET uses nothing; the person's click does
    const agent = request.agent(t.app);
    const shown = await agent.get(`${undo.pathname}${undo.search}`).set('Accept-Language', 'fr-FR');
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('Annuler la modification');
    const csrf = shown.text.match(/name="csrf" value="([^"]+)"/)![1];
    expect((await byOwner('zoe.new@example.com')).result.email).toBe('zoe.new@example.com');
    const forged = await request(t.app).post('/undo-email-change').type('form').send({ code: undo.searchParams.get('code')!, csrf });
    expect(forged.status).toBe(403);
    const done = await agent.post('/undo-email-change').type('form').send({ code: undo.searchParams.get('code')!, csrf, locale: 'fr-FR' });
    expect(done.status).toBe(200);
    expect(done.text).toContain('zoe@example.com');

    const back = (await byOwner('zoe@example.com')).result;
    expect(back.email).toBe('zoe@example.com');
    expect(back.emailVerified).not.toBeNull();
    // every session ended: access tokens, refresh tokens
    expect((await request(t.app).get('/entity').query({ access_token: first })).body.code).toBe(413);
    expect((await request(t.app).get('/entity').query({ access_token: fresh })).body.code).toBe(413);
    const refreshed = await post('/oauth/token', { grant_type: 'refresh_token', refresh_token: refresh }, { Authorization: basic(loginId, t.local.clients.login.client_secret) });
    expect(refreshed.body.stat).toBe('error');
    // the link works once
    const again = await request(t.app).get(`${undo.pathname}${undo.search}`);
    expect(again.status).toBe(410);
    expect((await signIn('zoe@example.com')).access_token).toEqual(expect.any(String));
  });

  it('the links mailed to the old address (verification, password reset) stop working when the address changes', async () => {
    await register('old-link@example.com');
    const welcome = (await mailsTo('old-link@example.com'))[0];
    expect((await forgot('old-link@example.com')).body).toEqual({ stat: 'ok' });
    const reset = linkIn((await mailsTo('old-link@example.com')).find((m) => /password/i.test(m.subject ?? ''))!).searchParams.get('code')!;
    const { access_token: token } = await signIn('old-link@example.com');
    expect((await editEmail(token, 'new-link@example.com')).body).toEqual({ stat: 'ok' });
    const used = await request(t.app).get('/access/useVerificationCode').query({ verification_code: linkIn(welcome).searchParams.get('verification_code')! });
    expect(used.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'verification_code' });
    expect((await byOwner('new-link@example.com')).result.emailVerified).toBeNull();
    const exchanged = await post('/oauth/token', { grant_type: 'authorization_code', code: reset, redirect_uri: recoverUrl }, { Authorization: basic(loginId, t.local.clients.login.client_secret) });
    expect(exchanged.body.stat).toBe('error');
  });

  it('an address never verified is told without a link and without the new address (it may be a typo, a stranger\'s)', async () => {
    await register('typo@example.con');
    const { access_token: token } = await signIn('typo@example.con');
    expect((await editEmail(token, 'typo-fixed@example.com')).body).toEqual({ stat: 'ok' });
    const notice = (await mailsTo('typo@example.con')).find((m) => m.subject?.includes('was changed'))!;
    expect(notice.text).toContain('is no longer typo@example.con');
    expect(notice.text).not.toContain('typo-fixed');
    expect(notice.text).not.toMatch(/https?:\/\//);
    // an unreserved address: anyone may register it
    expect((await register('typo@example.con')).body.stat).toBe('ok');
  });

  it('a fresh token changes the address through the record API too, with the same notice', async () => {
    await register('api-user@example.com');
    const { access_token: token } = await signIn('api-user@example.com');
    const res = await post('/entity.update', { access_token: token, attribute_name: 'email', value: '"api-user2@example.com"' });
    expect(res.body).toEqual({ stat: 'ok' });
    expect((await byOwner('api-user2@example.com')).result.emailVerified).toBeNull();
    expect((await mailsTo('api-user@example.com')).map((m) => m.subject)).toContain('The email address of your Gatehouse account was changed');
  });

  /** An account whose address is verified, signed in just now. */
  async function verifiedAccount(email: string) {
    await register(email);
    const code = linkIn((await mailsTo(email))[0]).searchParams.get('verification_code')!;
    expect((await request(t.app).get('/access/useVerificationCode').query({ verification_code: code })).body.stat).toBe('ok');
    return (await signIn(email)).access_token as string;
  }
  const undoLinkOf = async (email: string) => linkIn((await mailsTo(email)).filter((m) => m.subject?.includes('was changed')).pop()!);
  const undo = async (link: URL) => {
    const agent = request.agent(t.app);
    const shown = await agent.get(`${link.pathname}${link.search}`);
    const csrf = shown.text.match(/name="csrf" value="([^"]+)"/)?.[1];
    if (!csrf) return shown;
    return agent.post('/undo-email-change').type('form').send({ code: link.searchParams.get('code')!, csrf });
  };

  it('the old address stays reserved while its undo link lives: nobody can take it to block the undo', async () => {
    const token = await verifiedAccount('swap@example.com');
    expect((await editEmail(token, 'swap2@example.com')).body).toEqual({ stat: 'ok' });
    const taken = await register('swap@example.com');
    expect(taken.body).toMatchObject({ stat: 'error', code: 390, invalid_fields: { emailAddress: [expect.any(String)] } });
    const owned = await post('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'SWAP@example.com' }) }, { Authorization: owner });
    expect(owned.body).toMatchObject({ stat: 'error', argument_name: 'attributes.email' });
    const other = await verifiedAccount('swap-other@example.com');
    expect((await editEmail(other, 'swap@example.com')).body).toMatchObject({ stat: 'error', code: 390 });
    const res = await undo(await undoLinkOf('swap@example.com'));
    expect(res.status).toBe(200);
    expect((await byOwner('swap@example.com')).result.email).toBe('swap@example.com');
  });

  it('a chain of changes cannot be undone back to an address of the attacker\'s: the first undo spends the later links', async () => {
    const token = await verifiedAccount('chain-a@example.com');
    expect((await editEmail(token, 'chain-b@example.com')).body).toEqual({ stat: 'ok' });
    // the attacker verifies its own address B and moves on to C: B gets an undo link too
    expect((await post('/oauth/verify_email_native', shared({ redirect_uri: 'https://app.example.com/', signInEmailAddress: 'chain-b@example.com' }))).body.stat).toBe('ok');
    const verifyB = linkIn((await mailsTo('chain-b@example.com')).pop()!).searchParams.get('verification_code')!;
    expect((await request(t.app).get('/access/useVerificationCode').query({ verification_code: verifyB })).body.stat).toBe('ok');
    expect((await editEmail(token, 'chain-c@example.com')).body).toEqual({ stat: 'ok' });
    const linkA = await undoLinkOf('chain-a@example.com');
    const linkB = await undoLinkOf('chain-b@example.com');
    expect((await undo(linkA)).status).toBe(200);
    expect((await byOwner('chain-a@example.com')).result.email).toBe('chain-a@example.com');
    expect((await undo(linkB)).status).toBe(410);
    expect((await byOwner('chain-a@example.com')).result.email).toBe('chain-a@example.com');
    // the address the undo replaced is told, without a link
    expect((await mailsTo('chain-c@example.com')).map((m) => m.subject)).toContain('The email address of your Gatehouse account was changed');
  });

  it('the attacker using its later link first does not spend the earlier one', async () => {
    const token = await verifiedAccount('early-a@example.com');
    expect((await editEmail(token, 'early-b@example.com')).body).toEqual({ stat: 'ok' });
    expect((await post('/oauth/verify_email_native', shared({ redirect_uri: 'https://app.example.com/', signInEmailAddress: 'early-b@example.com' }))).body.stat).toBe('ok');
    const verifyB = linkIn((await mailsTo('early-b@example.com')).pop()!).searchParams.get('verification_code')!;
    await request(t.app).get('/access/useVerificationCode').query({ verification_code: verifyB });
    expect((await editEmail(token, 'early-c@example.com')).body).toEqual({ stat: 'ok' });
    expect((await undo(await undoLinkOf('early-b@example.com'))).status).toBe(200);
    expect((await undo(await undoLinkOf('early-a@example.com'))).status).toBe(200);
    expect((await byOwner('early-a@example.com')).result.email).toBe('early-a@example.com');
  });
});

describe('the application acting for the user', () => {
  it('an owner client needs no proof, but the old address is told and the new one is unverified unless the change sets emailVerified', async () => {
    await register('managed@example.com');
    const { result } = await byOwner('managed@example.com');
    const changed = await post('/entity.update', { type_name: 'user', uuid: result.uuid, attribute_name: 'email', value: '"managed2@example.com"' }, { Authorization: owner });
    expect(changed.body).toEqual({ stat: 'ok' });
    expect((await byOwner('managed2@example.com')).result.emailVerified).toBeNull();
    // the application acted: the old address is told, without a link to undo what the application did
    const notice = (await mailsTo('managed@example.com')).find((m) => m.subject === 'The email address of your Gatehouse account was changed')!;
    expect(notice.text).not.toMatch(/https?:\/\//);

    const both = await post('/entity.update', {
      type_name: 'user', uuid: result.uuid, attributes: JSON.stringify({ email: 'managed3@example.com', emailVerified: '2026-01-31 12:00:00.000000 +0000' }),
    }, { Authorization: owner });
    expect(both.body).toEqual({ stat: 'ok' });
    expect((await byOwner('managed3@example.com')).result.emailVerified).toBe('2026-01-31 12:00:00.000000 +0000');
    expect((await mailsTo('managed2@example.com')).map((m) => m.subject)).toContain('The email address of your Gatehouse account was changed');
  });

  it("a record's locale attribute is the notice's language when no flow names one", async () => {
    const created = await post('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'lena@example.com', locale: 'de-DE' }) }, { Authorization: owner });
    await post('/entity.update', { type_name: 'user', uuid: created.body.uuid, attribute_name: 'email', value: '"lena2@example.com"' }, { Authorization: owner });
    expect((await mailsTo('lena@example.com')).map((m) => m.subject)).toEqual(['Die E-Mail-Adresse deines Gatehouse-Kontos wurde geändert']);
  });
});
