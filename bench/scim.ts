import os from 'node:os';
import { perOperation, snapshotOf, type Watched } from './cpu';
import { form, startBenchServer, type BenchApp } from './harness';

/*
 * A directory's bulk: BENCH_SCIM_USERS people (default 10,000) provisioned into one organization in
 * one run, as Okta pushes them (for each, a lookup `filter=userName eq "…"`, then `POST /Users`),
 * over BENCH_CONNECTIONS parallel connections (default 4); then every one of them put into one
 * group mapped to a role by PATCHes of 500 members, then BENCH_SCIM_DEACTIVATE (default 1,000)
 * deactivated. Beside it, in the same run, the yardstick: the same number of accounts made by the
 * application's backend through the record API (`/entity.create`, then `/organizations/members/add`),
 * the two calls an app would make for the same people. Figures are people per second and the ratio
 * of the two; the total says whether a bulk fits in minutes.
 *   DATABASE_URL=mysql://… REDIS_URL=… SECRET_KEY=… npm run bench:scim
 * (also on the embedded default without DATABASE_URL)
 */
const users = Number(process.env.BENCH_SCIM_USERS ?? 10_000);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 4);
const deactivate = Math.min(users, Number(process.env.BENCH_SCIM_DEACTIVATE ?? 1_000));
const SCIM = 'application/scim+json';
const say = (line = '') => process.stdout.write(`${line}\n`);

/** Runs `work(i)` for i in [0, n) over `connections` workers; answers the seconds it took. */
async function parallel(n: number, work: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: connections }, async () => {
    while (next < n) await work(next++);
  }));
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function organization(bench: BenchApp, tag: string): Promise<{ id: string; domain: string }> {
  const domain = `${tag}-${Date.now().toString(36)}.example`;
  const made = await form('/organizations/create', { name: tag, slug: domain.replace(/\./g, '-') }, bench.owner);
  if (made.stat !== 'ok') throw new Error(JSON.stringify(made));
  const verified = await form('/organizations/domains/add', { organization_id: made.id as string, domain, verified: 'true' }, bench.owner);
  if (verified.stat !== 'ok') throw new Error(JSON.stringify(verified));
  return { id: made.id as string, domain };
}

async function main(): Promise<void> {
  // a directory's calls come from one address: the bench lifts the per-token budget like the others
  process.env.SCIM_LIMIT_TOKEN ??= '9999999/60';
  const bench = await startBenchServer();
  const watched: Watched[] = bench.pids.map((pid) => ({ label: 'api', pid, node: true }));
  try {
    for (const [key, value] of [['organization_max_members', '1000000'], ['organization_max_per_account', '100']]) {
      const set = await form('/settings/set_default', { key, value }, bench.owner);
      if (set.stat !== 'ok') throw new Error(JSON.stringify(set));
    }
    // the yardstick: the backend makes the accounts and adds them
    const peer = await organization(bench, 'api');
    let before = snapshotOf(watched);
    const peerSeconds = await parallel(users, async (i) => {
      const email = `person${i}@${peer.domain}`;
      const created = await form('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, givenName: 'Ada', familyName: `Lovelace ${i}`, emailVerified: '2026-11-29 00:00:00' }) }, bench.owner);
      if (created.stat !== 'ok') throw new Error(JSON.stringify(created));
      const added = await form('/organizations/members/add', { organization_id: peer.id, id: String(created.id), roles: 'member' }, bench.owner);
      if (added.stat !== 'ok') throw new Error(JSON.stringify(added));
    });
    const peerCpu = perOperation(before, snapshotOf(watched), users);

    // the directory
    const org = await organization(bench, 'scim');
    const token = (await form('/organizations/scim/tokens/create', { organization_id: org.id, description: 'bench' }, bench.owner)).token as string;
    await form('/organizations/scim/configure', { organization_id: org.id, group_roles: '{"Everyone":["admin"]}' }, bench.owner);
    const scim = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${bench.base}/scim/v2${path}`, {
        method, headers: { authorization: `Bearer ${token}`, accept: SCIM, ...(body !== undefined && { 'content-type': SCIM }) }, ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) as Record<string, any> : {} };
    };
    const ids: string[] = new Array(users);
    before = snapshotOf(watched);
    const scimSeconds = await parallel(users, async (i) => {
      const email = `person${i}@${org.domain}`;
      const found = await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}&startIndex=1&count=100`);
      if (found.status !== 200 || found.body.totalResults !== 0) throw new Error(JSON.stringify(found));
      const made = await scim('POST', '/Users', {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: email, externalId: `00u${i}`, active: true, displayName: `Ada Lovelace ${i}`,
        name: { givenName: 'Ada', familyName: `Lovelace ${i}` }, emails: [{ primary: true, type: 'work', value: email }], locale: 'en-US',
      });
      if (made.status !== 201) throw new Error(JSON.stringify(made));
      ids[i] = made.body.id as string;
    });
    const scimCpu = perOperation(before, snapshotOf(watched), users);

    // one group of everyone, mapped to a role, filled 500 members at a time (Okta's and Entra ID's batches are smaller)
    const group = await scim('POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Everyone', members: [] });
    const batches = Math.ceil(users / 500);
    const groupStarted = process.hrtime.bigint();
    for (let b = 0; b < batches; b++) {
      const added = await scim('PATCH', `/Groups/${group.body.id}?excludedAttributes=members`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'add', path: 'members', value: ids.slice(b * 500, (b + 1) * 500).map((value) => ({ value })) }],
      });
      if (added.status !== 200) throw new Error(JSON.stringify(added));
    }
    const groupSeconds = Number(process.hrtime.bigint() - groupStarted) / 1e9;

    const deactivateSeconds = await parallel(deactivate, async (i) => {
      const off = await scim('PATCH', `/Users/${ids[i]}`, { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', value: { active: false } }] });
      if (off.status !== 200 || off.body.active !== false) throw new Error(JSON.stringify(off));
    });

    say(`\n${os.cpus().length} cores, node ${process.version}, ${process.env.DATABASE_URL ? 'MariaDB' : 'SQLite'}${process.env.REDIS_URL ? ' + Redis' : ''}, `
      + `${users} people, ${connections} connections\n`);
    say('| scenario | people/s | total | ÷ the backend\'s | CPU per person |');
    say('|---|---|---|---|---|');
    say(`| the backend: /entity.create + /organizations/members/add (the yardstick) | ${(users / peerSeconds).toFixed(0)} | ${peerSeconds.toFixed(0)} s | 1.00 | ${peerCpu} |`);
    say(`| SCIM, as Okta pushes: lookup by userName + POST /Users | ${(users / scimSeconds).toFixed(0)} | ${scimSeconds.toFixed(0)} s | ${(peerSeconds / scimSeconds).toFixed(2)} | ${scimCpu} |`);
    say(`| SCIM: ${users} people into a group mapped to a role, ${batches} PATCHes of 500 | ${(users / groupSeconds).toFixed(0)} | ${groupSeconds.toFixed(0)} s | | |`);
    say(`| SCIM: ${deactivate} people deactivated (sessions ended, accounts disabled) | ${(deactivate / deactivateSeconds).toFixed(0)} | ${deactivateSeconds.toFixed(0)} s | | |`);
  } finally {
    await bench.stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
