import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import request from 'supertest';
import { buildApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createRuntime } from '../../src/runtime';
import { basic, startTestApp, type TestApp } from '../helpers/backend';

describe('a SECRET_KEY other than the one the data was sealed with', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('fails /readyz saying so, and the log of a refused call says so too', async () => {
    const ready = buildApp({ services: t.runtime.services, defaultApp: 'local', readiness: () => t.runtime.readiness() });
    expect((await request(ready).get('/readyz')).body).toMatchObject({ stat: 'ok', checks: { secret_key: true } });

    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({ write(chunk, _e, done) { lines.push(JSON.parse(String(chunk))); done(); } });
    const wrong = createRuntime(loadConfig({ ...t.backend.env, SECRET_KEY: randomBytes(32).toString('hex') }, t.backend.dir), createLogger('info', sink));
    try {
      const app = buildApp({ services: wrong.services, defaultApp: 'local', readiness: () => wrong.readiness() });
      const res = await request(app).get('/readyz');
      expect(res.status).toBe(503);
      expect(res.body.error_description).toContain('secret_key does not open the stored client secrets: it is not the key the data was sealed with');
      const call = await request(app).get('/clients/list').set('Authorization', basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret));
      expect(call.status).toBe(500);
      expect(JSON.stringify(call.body)).not.toContain('SECRET_KEY');
      const logged = lines.find((l) => l.request_id === call.body.request_id && l.msg === 'unexpected error');
      expect(JSON.stringify(logged)).toContain('not the key the data was sealed with');
    } finally {
      await wrong.close();
    }
  });
});
