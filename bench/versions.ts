import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Queue } from 'bullmq';
import { loadConfigOrExit } from '../src/config';
import { openDatabase, type Database } from '../src/db';
import type { SnapshotPayload } from '../src/domain/storage/versions';
import { base, duration, measure, root, startBenchServer, table, type Figures } from './harness';
import type autocannon from 'autocannon';

/*
 * Point-in-time lookups and the versions worker, on MariaDB + Redis (DATABASE_URL, REDIS_URL,
 * SECRET_KEY):   npm run bench:versions
 * - seeds BENCH_RECORDS records (default 100,000) with BENCH_VERSIONS snapshots each (default 10),
 *   written by SQL on the server (INSERT … SELECT), so seeding 1,000,000 snapshots takes a minute;
 * - measures, in one run and alternating, form posts at BENCH_CONNECTIONS (default 20):
 *   /entity by id (the yardstick), /versions/entity by id at a random time inside the record's
 *   history, /entity.find with an equality filter on email (an indexed attribute); then /entity
 *   and /versions/entity at one connection (the latency of a lookup on a server not saturated);
 * - then one worker process records BENCH_SNAPSHOTS pending snapshots (default 20,000): once with
 *   one BullMQ job per snapshot (as api pods enqueue them), once from a single job (a backlog left
 *   while Redis was down, which the relay hands over one job at a time).
 */
const records = Number(process.env.BENCH_RECORDS ?? 100_000);
const perRecord = Number(process.env.BENCH_VERSIONS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const pendingCount = Number(process.env.BENCH_SNAPSHOTS ?? 20_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const HOUR = 3_600_000;
const T0 = Date.UTC(2025, 0, 1);

const sqlTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
const specTime = (ms: number) => `${new Date(ms).toISOString().replace('T', ' ').replace('Z', '')}000 +0000`;

/** Records and their snapshots, generated on the server in chunks of 10,000 records. */
async function seed(db: Database, applicationId: number): Promise<{ firstId: number; lastId: number }> {
  const q = (sql: string, bind: unknown[] = []) => db.sequelize.query(sql, { bind });
  const digits = 'SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9';
  const chunk = 10_000;
  for (let from = 0; from < records; from += chunk) {
    const n = Math.min(chunk, records - from);
    // record i was created at T0 + i seconds and changed every hour since: perRecord versions
    await q(`INSERT INTO entities (application_id, type_name, uuid, email, email_key, attributes, created, last_updated, version)
      SELECT $1, 'user', UUID(), CONCAT('u', i, '@bench.example'), CONCAT('u', i, '@bench.example'), CONCAT('{"displayName":"v', $4, '"}'),
        TIMESTAMPADD(SECOND, i, $2), TIMESTAMPADD(HOUR, $4 - 1, TIMESTAMPADD(SECOND, i, $2)), $4
      FROM (SELECT $3 + a.d + 10 * b.d + 100 * c.d + 1000 * e.d AS i FROM (${digits}) a, (${digits}) b, (${digits}) c, (${digits}) e) s
      WHERE i < $3 + $5`, [applicationId, sqlTime(T0), from, perRecord, n]);
  }
  const [[range]] = await q('SELECT MIN(id) AS lo, MAX(id) AS hi FROM entities WHERE application_id = $1', [applicationId]) as [{ lo: number; hi: number }[], unknown];
  const ten = Array.from({ length: perRecord }, (_, k) => `SELECT ${k + 1} AS k`).join(' UNION ALL ');
  for (let lo = Number(range.lo); lo <= Number(range.hi); lo += chunk) {
    await q(`INSERT INTO entity_versions (application_id, entity_id, valid_from, version, deleted, entity_uuid, snapshot)
      SELECT e.application_id, e.id, TIMESTAMPADD(HOUR, v.k - 1, e.created), v.k, 0, NULL,
        JSON_OBJECT('id', e.id, 'uuid', e.uuid, 'created', DATE_FORMAT(e.created, '%Y-%m-%d %H:%i:%s.%f +0000'),
          'lastUpdated', DATE_FORMAT(TIMESTAMPADD(HOUR, v.k - 1, e.created), '%Y-%m-%d %H:%i:%s.%f +0000'), 'email', e.email, 'emailVerified', NULL,
          'displayName', CONCAT('v', v.k), 'givenName', NULL, 'familyName', NULL, 'birthdate', NULL, 'profiles', JSON_ARRAY())
      FROM entities e, (${ten}) v WHERE e.application_id = $1 AND e.id >= $2 AND e.id < $3`, [applicationId, lo, lo + chunk]);
  }
  return { firstId: Number(range.lo), lastId: Number(range.hi) };
}

/** Form posts whose body `make` draws anew for every request. */
function varying(pathname: string, auth: string, make: () => Record<string, string>): autocannon.Options {
  return {
    url: base,
    requests: [{
      method: 'POST', path: pathname, headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: auth },
      setupRequest: (req) => ({ ...req, body: new URLSearchParams(make()).toString() }),
    }],
  };
}

/** Seconds until no versions outbox row of `ids` is pending. */
async function recorded(db: Database, ids: string[], started: number): Promise<number> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const [[row]] = await db.sequelize.query("SELECT COUNT(*) AS n FROM outbox WHERE queue = 'versions' AND status = 'pending'") as [{ n: number }[], unknown];
    if (Number(row.n) === 0) return (Date.now() - started) / 1000;
    if (Date.now() > deadline) throw new Error(`${row.n} of ${ids.length} snapshots still pending after 300 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function workerThroughput(db: Database, applicationId: number, ids: { firstId: number; lastId: number }, oneJob: boolean): Promise<number> {
  const config = loadConfigOrExit();
  const prefix = `benchversions${Date.now().toString(36)}`;
  const queue = new Queue('versions', { connection: { url: config.redisUrl! }, prefix });
  const now = Date.now();
  const jobs = Array.from({ length: pendingCount }, (_, n) => {
    const entityId = ids.firstId + (n % (ids.lastId - ids.firstId + 1));
    const version = 1000 + Math.floor(n / (ids.lastId - ids.firstId + 1)) + (oneJob ? 500 : 0);
    const payload: SnapshotPayload = {
      entityId, uuid: '00000000-0000-4000-8000-000000000000', version, validFrom: new Date(now + n).toISOString(),
      snapshot: { id: entityId, email: `u${n}@bench.example`, displayName: `pending ${n}`, profiles: [] },
    };
    return { id: randomUUID(), applicationId, queue: 'versions' as const, name: 'snapshot', payload, entityId };
  });
  for (let i = 0; i < jobs.length; i += 1000) await db.transaction((tx) => db.outbox.insert(jobs.slice(i, i + 1000), new Date(), tx));

  const worker = spawn(process.execPath, [path.join(root, 'dist/workers/main.js')], {
    env: { ...process.env, REDIS_PREFIX: prefix, MAIL_TRANSPORT: 'file', LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) => worker.stdout.on('data', (d) => String(d).includes('worker ready') && resolve()));
  const started = Date.now();
  process.stderr.write(`worker ready; enqueuing ${oneJob ? 1 : jobs.length} job(s)\n`);
  const enqueued = oneJob ? jobs.slice(-1) : jobs;
  for (let i = 0; i < enqueued.length; i += 1000) {
    await queue.addBulk(enqueued.slice(i, i + 1000).map((j) => ({ name: j.name, data: { outboxId: j.id }, opts: { jobId: j.id } })));
  }
  const seconds = await recorded(db, jobs.map((j) => j.id), started);
  process.stderr.write(`recorded in ${seconds} s; stopping the worker\n`);
  worker.kill('SIGTERM');
  await new Promise((r) => worker.on('exit', r));
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
  return pendingCount / seconds;
}

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  if (!config.redisUrl || config.database.dialect !== 'mysql') throw new Error('the versions benchmark needs DATABASE_URL (MySQL/MariaDB) and REDIS_URL');
  const bench = await startBenchServer();
  const db = openDatabase(config.database);
  try {
    const app = (await db.applications.findByName(bench.app))!;
    const seedStart = Date.now();
    const ids = await seed(db, app.id);
    const seedSeconds = (Date.now() - seedStart) / 1000;
    const randomId = () => ids.firstId + Math.floor(Math.random() * (ids.lastId - ids.firstId + 1));
    const scenarios: [string, () => autocannon.Options][] = [
      ['POST /entity (id)', () => varying('/entity', bench.owner, () => ({ type_name: 'user', id: String(randomId()) }))],
      ['POST /versions/entity (id, a time in its history)', () => varying('/versions/entity', bench.owner, () => {
        const id = randomId();
        // record id was created at T0 + (id - firstId) s; pick a time in its perRecord hours
        return { type_name: 'user', id: String(id), timestamp: specTime(T0 + (id - ids.firstId) * 1000 + Math.floor(Math.random() * perRecord * HOUR)) };
      })],
      ['POST /entity.find (email = …)', () => varying('/entity.find', bench.owner, () => ({
        type_name: 'user', filter: `email = 'u${randomId() - ids.firstId}@bench.example'`,
      }))],
    ];
    const results = new Map<string, Figures[]>();
    for (let round = 0; round < rounds; round++) {
      for (const [name, options] of scenarios) {
        const figures = await measure(name, connections, options());
        results.set(name, [...(results.get(name) ?? []), figures]);
      }
    }
    // the best round of each (the machine is shared: the best is the least disturbed)
    process.stderr.write('lookups measured\n');
    const best = [...results.values()].map((runs) => runs.reduce((a, b) => (b.rps > a.rps ? b : a)));
    // the latency of one lookup when the server is not saturated (one connection, one at a time)
    const unloaded = [
      await measure(`${scenarios[0][0]}, 1 connection`, 1, scenarios[0][1]()),
      await measure(`${scenarios[1][0]}, 1 connection`, 1, scenarios[1][1]()),
    ];
    const perJob = await workerThroughput(db, app.id, ids, false);
    const oneJob = await workerThroughput(db, app.id, ids, true);

    process.stdout.write(`\n${records} records, ${records * perRecord} snapshots (seeded in ${seedSeconds.toFixed(0)} s), `
      + `${connections} connections, ${duration} s per scenario, best of ${rounds} alternating rounds, node ${process.version}\n\n`);
    process.stdout.write(`${table(best, best[0].rps, '/entity')}\n${table(unloaded, unloaded[0].rps, '/entity').split('\n').slice(2).join('\n')}\n\n`);
    for (const f of best) process.stdout.write(`${f.name}: ${f.cpu}\n`);
    process.stdout.write(`\n| versions worker, one process | snapshots/s |\n|---|---|\n`);
    process.stdout.write(`| ${pendingCount} snapshots, one job each | ${perJob.toFixed(0)} |\n`);
    process.stdout.write(`| ${pendingCount} snapshots, one job for the whole backlog | ${oneJob.toFixed(0)} |\n`);
  } finally {
    await db.close();
    await bench.stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
