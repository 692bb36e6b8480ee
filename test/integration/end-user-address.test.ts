import { Writable } from 'node:stream';
import request from 'supertest';
import { createLogger } from '../../src/logger';
import { basic, startTestApp, type TestApp } from '../helpers/backend';

/**
 * An app's backend calls the login endpoints for all its users from one address: with its secret
 * and `trusted_end_user_ip`, X-End-User-IP makes the per-address budgets count its users' addresses.
 */
describe('X-End-User-IP', () => {
  let t: TestApp;
  const lines: Record<string, unknown>[] = [];
  let owner: string;
  let backend: { id: string; secret: string };
  let untrusted: { id: string; secret: string };
  const sink = new Writable({ write(chunk, _e, done) { lines.push(JSON.parse(String(chunk))); done(); } });

  beforeAll(async () => {
    t = await startTestApp({ env: { REGISTER_LIMIT_ADDRESS: '3/3600', LOGIN_LIMIT_ADDRESS: '3/900' }, logger: createLogger('info', sink) });
    owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
    const add = async (description: string) => {
      const res = await request(t.app).post('/clients/add').set('Authorization', owner).type('form').send({ description, features: '["login_client"]' });
      await request(t.app).post('/settings/set').set('Authorization', owner).type('form').send({ for_client_id: res.body.client_id, key: 'default_flow_name', value: 'standard' });
      return { id: res.body.client_id as string, secret: res.body.client_secret as string };
    };
    backend = await add('backend');
    untrusted = await add('other backend');
    expect((await request(t.app).post('/settings/set').set('Authorization', owner).type('form')
      .send({ for_client_id: backend.id, key: 'trusted_end_user_ip', value: 'true' })).body.stat).toBe('ok');
  });
  afterAll(() => t.close());

  const register = (client: { id: string; secret?: string }, n: string, headers: Record<string, string> = {}, auth: 'params' | 'basic' = 'params') => {
    const body = {
      locale: 'en-US', flow_version: '1', emailAddress: `user${n}@example.com`, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
      firstName: 'U', lastName: 'N', displayName: `user${n}`,
      ...(auth === 'params' ? { client_id: client.id, ...(client.secret && { client_secret: client.secret }) } : {}),
    };
    const call = request(t.app).post('/oauth/register_native_traditional').type('form').set(headers);
    if (auth === 'basic') call.set('Authorization', basic(client.id, client.secret!));
    return call.send(body);
  };

  it('a trusted backend\'s users each get their own budget; one user past it is told which budget', async () => {
    for (let i = 0; i < 6; i++) {
      const res = await register(backend, `a${i}`, { 'X-End-User-IP': `203.0.113.${i + 1}` }, i % 2 === 0 ? 'params' : 'basic');
      expect(res.body.stat).toBe('ok');
    }
    for (let i = 0; i < 3; i++) expect((await register(backend, `b${i}`, { 'X-End-User-IP': '198.51.100.9' })).body.stat).toBe('ok');
    const spent = await register(backend, 'b3', { 'X-End-User-IP': '::ffff:198.51.100.9' });
    expect(spent.body).toMatchObject({ stat: 'error', code: 510, error: 'api_limit_error' });
    expect(spent.body.error_description).toMatch(/^too many registrations from this address; try again in \d+ seconds$/);
  });

  it('ignored (and said once in the log) for a client without the setting, or one named by client_id alone', async () => {
    lines.length = 0;
    // an untrusted backend: every call counts against its own address (3 registrations)
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await register(untrusted, `c${i}`, { 'X-End-User-IP': `192.0.2.${i + 1}` })).body);
    expect(answers.slice(0, 3).map((b) => b.stat)).toEqual(['ok', 'ok', 'ok']);
    expect(answers[3]).toMatchObject({ code: 510, error_description: expect.stringContaining('registrations from this address') });
    // the trusted client without its secret (a browser could send this): ignored too
    expect((await register({ id: backend.id }, 'd0', { 'X-End-User-IP': '192.0.2.50' })).body).toMatchObject({ code: 510 });
    const ignored = lines.filter((l) => String(l.msg).startsWith('X-End-User-IP ignored'));
    expect(ignored.map((l) => l.client_id).sort()).toEqual([backend.id, untrusted.id].sort());
  });

  it('a value that is not one address is refused naming the header', async () => {
    for (const value of ['203.0.113.1, 10.0.0.1', 'localhost', '999.1.1.1']) {
      expect((await register(backend, 'e0', { 'X-End-User-IP': value })).body).toMatchObject({ code: 200, argument_name: 'X-End-User-IP' });
    }
  });

  it('counts an address, not its spellings: one IPv6 address six ways, an IPv4 address as mapped IPv6, one /64', async () => {
    const spellings = ['2001:db8:0:0:1:0:0:1', '2001:DB8::1:0:0:1', '2001:0db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1', '2001:db8:0::1:0:0:1', '2001:db8:0:0:1::1'];
    const six = [];
    for (const [n, ip] of spellings.entries()) six.push((await register(backend, `v6-${n}`, { 'X-End-User-IP': ip })).body);
    expect(six.map((b) => b.code ?? b.stat)).toEqual(['ok', 'ok', 'ok', 510, 510, 510]);
    const mapped = [];
    for (const [n, ip] of ['192.0.2.200', '::ffff:192.0.2.200', '::ffff:c000:2c8', '0:0:0:0:0:ffff:192.0.2.200'].entries()) {
      mapped.push((await register(backend, `v4-${n}`, { 'X-End-User-IP': ip })).body);
    }
    expect(mapped.map((b) => b.code ?? b.stat)).toEqual(['ok', 'ok', 'ok', 510]);
    const network = [];
    for (let i = 1; i <= 4; i++) network.push((await register(backend, `net-${i}`, { 'X-End-User-IP': `2001:db8:aa:bb:${i}::${i}` })).body);
    expect(network.map((b) => b.code ?? b.stat)).toEqual(['ok', 'ok', 'ok', 510]);
    expect((await register(backend, 'net-other', { 'X-End-User-IP': '2001:db8:aa:bc::1' })).body.stat).toBe('ok');
  });

  it('refuses a zone id, however long, naming the header and keeping nothing', async () => {
    for (const value of ['fe80::1%eth0', `fe80::1%${'x'.repeat(8192)}`]) {
      const res = await register(backend, 'zone', { 'X-End-User-IP': value });
      expect(res.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'X-End-User-IP' });
      expect(res.body.error_description).toMatch(/without a zone id/);
    }
  });

  it('failed sign-ins through the backend count against the guesser\'s address, not every user\'s', async () => {
    const signIn = (email: string, password: string, ip: string) => request(t.app).post('/oauth/auth_native_traditional').type('form')
      .set('X-End-User-IP', ip).send({ client_id: backend.id, client_secret: backend.secret, locale: 'en-US', flow_version: '1', signInEmailAddress: email, currentPassword: password });
    for (let i = 0; i < 3; i++) expect((await signIn(`nobody${i}@example.com`, 'guess', '198.51.100.66')).body.code).toBe(210);
    const guesser = await signIn('nobody9@example.com', 'guess', '198.51.100.66');
    expect(guesser.body).toMatchObject({ code: 510, error_description: expect.stringContaining('failed sign-ins from this address') });
    expect((await signIn('usera0@example.com', 'correct horse battery', '203.0.113.77')).body.stat).toBe('ok');
  });
});
