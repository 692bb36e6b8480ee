import request from 'supertest';
import { FAILED_CALLS } from '../../src/web/scim';
import { basic, startTestApp, type TestApp } from '../helpers/backend';

// docs/scim.md#tokens: a directory's calls are counted per token (SCIM_LIMIT_TOKEN), calls with a
// token that is none per client address; past either, 429 with Retry-After as a SCIM error. Good
// tokens are never limited by their address (many organizations' directories share a provider's).
// Parallel calls never get past a budget.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { SCIM_LIMIT_TOKEN: '5/60' } });
});
afterAll(() => t?.close());

async function tokenOfNewOrganization(): Promise<string> {
  const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  const slug = `limits-${Math.random().toString(36).slice(2, 10)}`;
  const org = (await request(t.app).post('/organizations/create').set('Authorization', owner).type('form').send({ name: 'Limits', slug })).body.id as string;
  return (await request(t.app).post('/organizations/scim/tokens/create').set('Authorization', owner).type('form').send({ organization_id: org })).body.token as string;
}

it('counts each token\'s calls; past its budget, 429 with Retry-After, even for parallel calls; calls with a token that is none count against the address, good ones never', async () => {
  const first = await tokenOfNewOrganization();
  const second = await tokenOfNewOrganization();
  const call = (token: string) => request(t.app).get('/scim/v2/Users').set('Authorization', `Bearer ${token}`);
  const answers = await Promise.all(Array.from({ length: 8 }, () => call(first)));
  expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
  const refused = answers.find((a) => a.status === 429)!;
  expect(refused.headers['content-type']).toContain('application/scim+json');
  expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  expect(JSON.parse(refused.text)).toMatchObject({ status: '429', detail: expect.stringContaining('too many calls') });
  // another token has its own budget
  expect((await call(second)).status).toBe(200);
  // tokens that are none: 401 until the address's budget is spent, then 429
  const bad = await Promise.all(Array.from({ length: FAILED_CALLS.max + 5 }, () => call('ghscim_' + 'B'.repeat(43))));
  expect(bad.filter((a) => a.status === 401)).toHaveLength(FAILED_CALLS.max);
  expect(bad.filter((a) => a.status === 429)).toHaveLength(5);
  // a good token from that address still answers
  expect((await call(second)).status).toBe(200);
});
