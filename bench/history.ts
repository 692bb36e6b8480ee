import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import mysql from 'mysql2/promise';
import { form, root, startBenchServer, startBenchWorker, type BenchApp } from './harness';

/*
 * What history costs on disk, per sign-in and per edit, and what a point-in-time lookup costs, on
 * MariaDB + Redis (DATABASE_URL, REDIS_URL, SECRET_KEY):   npm run bench:history
 * Beside an earlier release in the same run when BENCH_RELEASE_ROOT names a built worktree of one.
 * For each, on a database of its own, with one api process and one worker:
 * - BENCH_ACCOUNTS accounts (default 300) with realistic records (about 1.5 KB of attributes), each
 *   signed in once (the first sign-in adds lastLogin);
 * - then BENCH_SIGN_INS rounds of one sign-in each (default 30), then one edit each (a
 *   displayName), each phase recorded by the worker before the table is measured: the bytes of
 *   its snapshot columns per version added, and at the end entity_versions' data and indexes
 *   (InnoDB's pages, after ANALYZE TABLE) per version;
 * - then /versions/entity at a random time in a random account's history, beside /entity by id,
 *   at BENCH_CONNECTIONS (default 10) for BENCH_SECONDS, BENCH_ROUNDS alternating rounds (default 3).
 * Hashes are made cheap (ARGON2_MEMORY_KIB=8192, one pass) so that the sign-ins measure history, not argon2.
 */
const accounts = Number(process.env.BENCH_ACCOUNTS ?? 300);
const signIns = Number(process.env.BENCH_SIGN_INS ?? 30);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const PASSWORD = 'bench history password 42';

const say = (line = '') => process.stdout.write(`${line}\n`);
const note = (line: string) => process.stderr.write(`${line}\n`);

/** A record as people fill them in: names, an address, a phone, preferences, a short biography (about 1.5 KB). */
function attributes(n: number): Record<string, unknown> {
  return {
    email: `history-${n}@bench.example`, password: PASSWORD, displayName: `Person ${n}`, givenName: 'Ada', familyName: `Lovelace-${n}`, birthdate: '1815-12-10',
    phone: `+44 20 7946 ${String(n % 10000).padStart(4, '0')}`, locale: 'en-GB', timezone: 'Europe/London',
    primaryAddress: { street: `${n} Analytical Engine Road`, city: 'London', zip: 'W1 4AB', country: 'GB', region: 'Greater London' },
    preferences: Object.fromEntries(Array.from({ length: 24 }, (_, i) => [`notify_topic_${i}`, i % 3 === 0])),
    marketing: { newsletter: true, partners: false, consentedAt: '2025-03-01T10:00:00Z', source: 'signup-form-v3' },
    about: 'Mathematician and writer, chiefly known for work on the proposed mechanical general-purpose computer, the Analytical Engine. '.repeat(5),
    loyalty: { tier: 'gold', points: n * 7, memberSince: '2019-06-01' },
  };
}

interface Side { name: string; app: BenchApp; databaseUrl: string; prefix: string; worker?: ChildProcess; ids: number[]; made: number }

async function database(url: string) {
  const u = new URL(url);
  return mysql.createConnection({ host: u.hostname, port: Number(u.port || 3306), user: decodeURIComponent(u.username), password: decodeURIComponent(u.password), database: u.pathname.slice(1) });
}

/** A fresh database named `name` on the server of DATABASE_URL: its URL. */
async function freshDatabase(name: string): Promise<string> {
  const url = new URL(process.env.DATABASE_URL!);
  const admin = await database(url.toString());
  await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await admin.end();
  url.pathname = `/${name}`;
  return url.toString();
}

/** Waits until the worker has recorded every snapshot. */
async function recorded(side: Side): Promise<void> {
  const db = await database(side.databaseUrl);
  try {
    const deadline = Date.now() + 600_000;
    for (;;) {
      const [[row]] = await db.query("SELECT COUNT(*) AS n FROM outbox WHERE queue = 'versions' AND status <> 'done'") as unknown as [{ n: number }[]];
      if (Number(row.n) === 0) return;
      if (Date.now() > deadline) throw new Error(`${row.n} snapshots still pending on ${side.name}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await db.end();
  }
}

/** entity_versions as stored: InnoDB's pages (data and indexes), its rows and the bytes of its snapshot columns. */
async function measured(side: Side) {
  const db = await database(side.databaseUrl);
  try {
    await db.query('ANALYZE TABLE entity_versions');
    const [[table]] = await db.query("SELECT data_length + index_length AS bytes FROM information_schema.TABLES WHERE table_schema = DATABASE() AND table_name = 'entity_versions'") as unknown as [{ bytes: number }[]];
    const [[columns]] = await db.query(`SELECT COUNT(*) AS n, COALESCE(SUM(LENGTH(snapshot)), 0)
      + COALESCE(SUM(${side.name === 'this release' ? 'COALESCE(LENGTH(sign_ins), 0)' : '0'}), 0) AS payload FROM entity_versions`) as unknown as [{ n: number; payload: number }[]];
    return { bytes: Number(table.bytes), rows: Number(columns.n), payload: Number(columns.payload) };
  } finally {
    await db.end();
  }
}

/** `count` rounds in which every account signs in once (as people do, days apart), `parallel` at a time. */
async function signInAll(side: Side, count: number, parallel = 8): Promise<void> {
  for (let k = 0; k < count; k++) {
    let next = 0;
    await Promise.all(Array.from({ length: parallel }, async () => {
      for (let n = next++; n < accounts; n = next++) {
        const r = await form('/oauth/auth_native_traditional', { client_id: side.app.loginId, locale: 'en-US', signInEmailAddress: `history-${n}@bench.example`, currentPassword: PASSWORD }, undefined, side.app.base);
        if (r.stat !== 'ok') throw new Error(`sign-in on ${side.name}: ${JSON.stringify(r).slice(0, 300)}`);
      }
    }));
  }
}

async function main(): Promise<void> {
  if (!process.env.REDIS_URL || !/^(mysql|mariadb):/.test(process.env.DATABASE_URL ?? '')) throw new Error('the history benchmark needs DATABASE_URL (MariaDB) and REDIS_URL');
  Object.assign(process.env, { ARGON2_MEMORY_KIB: '8192', ARGON2_ITERATIONS: '1' });
  const releaseRoot = process.env.BENCH_RELEASE_ROOT;
  const sides: Side[] = [];
  try {
    for (const [name, at, port] of [['this release', root, 3917], ...(releaseRoot ? [['the release before', releaseRoot, 3918]] : [])] as [string, string, number][]) {
      const databaseUrl = await freshDatabase(`gatehouse_bench_history_${port}`);
      // each side's api and worker on queues of their own
      const prefix = `benchhistory${port}${Date.now().toString(36)}`;
      process.env.REDIS_PREFIX = prefix;
      const app = await startBenchServer({ release: { root: at, port, databaseUrl } });
      const side: Side = { name, app, databaseUrl, prefix, ids: [], made: 0 };
      sides.push(side);
      side.worker = await startBenchWorker({ DATABASE_URL: side.databaseUrl, REDIS_PREFIX: side.prefix }, at);
    }
    const figures = new Map<string, { signInPayload: number; editPayload: number; rows: number; versions: number; total: number }>();
    for (const side of sides) {
      for (let from = 0; from < accounts; from += 100) {
        const batch = Array.from({ length: Math.min(100, accounts - from) }, (_, i) => attributes(from + i));
        const made = await form('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify(batch) }, side.app.owner, side.app.base);
        if (made.stat !== 'ok') throw new Error(`${side.name}: ${JSON.stringify(made).slice(0, 300)}`);
      }
      const found = await form('/entity.find', { type_name: 'user', attributes: '["id"]', max_results: String(accounts) }, side.app.owner, side.app.base);
      side.ids = (found.results as { id: number }[]).map((r) => r.id);
      side.made = Date.now();
      note(`${side.name}: ${accounts} accounts made; first sign-ins`);
      await signInAll(side, 1);
      await recorded(side);
      const start = await measured(side);
      note(`${side.name}: ${accounts * signIns} sign-ins`);
      await signInAll(side, signIns);
      await recorded(side);
      const afterSignIns = await measured(side);
      note(`${side.name}: ${accounts} edits`);
      for (const id of side.ids) {
        const r = await form('/entity.update', { type_name: 'user', id: String(id), attributes: JSON.stringify({ displayName: `Edited ${id}` }) }, side.app.owner, side.app.base);
        if (r.stat !== 'ok') throw new Error(JSON.stringify(r));
      }
      await recorded(side);
      const afterEdits = await measured(side);
      const n = accounts * signIns;
      // (InnoDB allocates pages in extents of 1 MB: the bytes on disk are given for the whole table, the bytes of the columns per version)
      figures.set(side.name, {
        signInPayload: (afterSignIns.payload - start.payload) / n, editPayload: (afterEdits.payload - afterSignIns.payload) / accounts,
        rows: afterEdits.rows, versions: accounts * (signIns + 3), total: afterEdits.bytes,
      });
    }

    // lookups: /versions/entity at a random time in an account's history (after every account was made), beside /entity by id
    const lookups = new Map<string, { rps: number; p50: number; p99: number }[]>();
    const options = (side: Side, kind: 'entity' | 'versions'): autocannon.Options => ({
      url: side.app.base, connections, duration: seconds, pipelining: 1,
      requests: [{
        method: 'POST', path: kind === 'entity' ? '/entity' : '/versions/entity', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: side.app.owner },
        setupRequest: (req) => {
          const id = String(side.ids[Math.floor(Math.random() * side.ids.length)]);
          const when = new Date(side.made + Math.random() * (Date.now() - side.made)).toISOString();
          return { ...req, body: new URLSearchParams(kind === 'entity' ? { type_name: 'user', id } : { type_name: 'user', id, timestamp: when }).toString() };
        },
      }],
    });
    // every time drawn is inside an account's history: a lookup answers its record, never 310 (which is HTTP 200 too)
    for (const side of sides) {
      for (let i = 0; i < 20; i++) {
        const id = String(side.ids[Math.floor(Math.random() * side.ids.length)]);
        const when = new Date(side.made + Math.random() * (Date.now() - side.made)).toISOString();
        const r = await form('/versions/entity', { type_name: 'user', id, timestamp: when }, side.app.owner, side.app.base);
        if (r.stat !== 'ok') throw new Error(`${side.name}: /versions/entity answered ${JSON.stringify(r).slice(0, 200)}`);
      }
    }
    for (let round = 0; round < rounds; round++) {
      for (const side of sides) {
        for (const kind of ['entity', 'versions'] as const) {
          const r = await autocannon(options(side, kind));
          if (r.non2xx + r.errors > 0) throw new Error(`${side.name} ${kind}: ${r.non2xx + r.errors} failed`);
          const key = `${side.name}|${kind}`;
          lookups.set(key, [...(lookups.get(key) ?? []), { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 }]);
        }
      }
    }

    say(`${accounts} accounts of about 1.5 KB each; a first sign-in, then ${signIns} rounds of one sign-in each, then one edit each; node ${process.version}`);
    say();
    say('| release | versions | rows | entity_versions on disk (data + indexes) | per version | snapshot bytes per sign-in | per edit | sign-in ÷ edit |');
    say('|---|---|---|---|---|---|---|---|');
    for (const [name, f] of figures) {
      say(`| ${name} | ${f.versions} | ${f.rows} | ${(f.total / 1e6).toFixed(1)} MB | ${(f.total / f.versions).toFixed(0)} | ${f.signInPayload.toFixed(1)} | ${f.editPayload.toFixed(0)} | ${(f.signInPayload / f.editPayload).toFixed(3)} |`);
    }
    say();
    say(`| release | lookup | requests/s (median of ${rounds}) | p50 ms | p99 ms (median) | ÷ /entity |`);
    say('|---|---|---|---|---|---|');
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    for (const side of sides) {
      const entity = lookups.get(`${side.name}|entity`)!;
      for (const kind of ['entity', 'versions'] as const) {
        const list = lookups.get(`${side.name}|${kind}`)!;
        say(`| ${side.name} | ${kind === 'entity' ? '/entity by id' : '/versions/entity at a random time'} | ${median(list.map((l) => l.rps)).toFixed(0)} | ${median(list.map((l) => l.p50))} | ${median(list.map((l) => l.p99))} | ${(median(list.map((l) => l.rps)) / median(entity.map((l) => l.rps))).toFixed(2)} |`);
      }
    }
  } finally {
    for (const side of sides) {
      side.worker?.kill('SIGTERM');
      await side.app.stop();
    }
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
