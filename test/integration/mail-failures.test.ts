import request from 'supertest';
import { startTestApp, type TestApp } from '../helpers/backend';
import { startSmtp } from '../helpers/smtp';
import { stored } from '../helpers/stored';

describe('a message the SMTP server refuses', () => {
  let t: TestApp;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  beforeAll(async () => {
    smtp = await startSmtp({ refuse: (to) => to.startsWith('nobody') });
    t = await startTestApp({ env: { MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}` } });
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  it('keeps why in the outbox row without the recipient\'s address (the server\'s 550 quotes it)', async () => {
    const client = t.local.clients.login;
    const res = await request(t.app).post('/oauth/register_native_traditional').type('form').send({
      client_id: client.client_id, locale: 'en-US', emailAddress: 'nobody.here@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
      firstName: 'No', lastName: 'Body', displayName: 'nobody',
    });
    expect(res.body.stat).toBe('ok');
    const failed = () => stored(t.runtime.db).rows<{ id: string; status: string; attempts: number; last_error: string; payload: string }>("SELECT * FROM outbox WHERE queue = 'mail' AND last_error IS NOT NULL");
    for (let i = 0; i < 200 && (await failed()).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    const [row] = await failed();
    expect(row?.last_error).toContain('Recipient address rejected');
    expect(row?.last_error).toContain('550 <address>: Recipient address rejected');
    expect(row?.last_error).not.toContain('example.com');
  });
});
