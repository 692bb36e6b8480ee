import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import mysql from 'mysql2/promise';
import { hashSync } from 'bcryptjs';
import { freshDatabase } from './queries';

/*
 * `gatehouse users:import` of BENCH_IMPORT_RECORDS (100,000) records, on the embedded default and,
 * when DATABASE_URL names MariaDB/MySQL, there too:
 *   npm run bench:import
 * Each engine imports the same records twice into a fresh database, round by round: once with a
 * bcrypt hash each (from another system) and once with no password, the baseline. The ratio is
 * the cost of bringing the hashes: about 1.0 when no hash is computed per record. The bcrypt hashes
 * (cost 10) are made once, 64 of them, and shared by the records.
 */
const records = Number(process.env.BENCH_IMPORT_RECORDS ?? 100_000);
const bin = path.join(__dirname, '../../bin/gatehouse.js');

interface Run { seconds: number; peakMb: number }

function writeFiles(dir: string): { hashed: string; plain: string } {
  const hashes = Array.from({ length: 64 }, (_, i) => hashSync(`password number ${i}`, 10));
  const hashed = path.join(dir, 'hashed.jsonl');
  const plain = path.join(dir, 'plain.jsonl');
  const a = fs.openSync(hashed, 'w');
  const b = fs.openSync(plain, 'w');
  for (let n = 0; n < records; n++) {
    const record = { email: `user${n}@import.example`, givenName: `User ${n}`, familyName: 'Imported', locale: 'en-US' };
    fs.writeSync(a, `${JSON.stringify({ ...record, password: { hashed: hashes[n % hashes.length] } })}\n`);
    fs.writeSync(b, `${JSON.stringify(record)}\n`);
  }
  fs.closeSync(a);
  fs.closeSync(b);
  return { hashed, plain };
}

/** A fresh database of the engine: a data folder for SQLite, a new database on the MariaDB server. */
const fresh = (engine: 'sqlite' | 'mysql', dir: string, n: number) => freshDatabase(engine, dir, `gatehouse_bench_import_${n}`);

function run(env: NodeJS.ProcessEnv, args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [bin, ...args], { env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

/** One import into a fresh database: its time, and the command's peak memory (GNU time). */
async function importOnce(engine: 'sqlite' | 'mysql', dir: string, n: number, file: string): Promise<Run> {
  const env = await fresh(engine, dir, n);
  if (engine === 'mysql' && run(env, ['migrate']).status !== 0) throw new Error('migrate failed');
  if (run(env, ['init']).status !== 0) throw new Error('init failed');
  const started = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, bin, 'users:import', file], { env, encoding: 'utf8' });
  const seconds = (performance.now() - started) / 1000;
  if (r.status !== 0) throw new Error(`the import failed: ${r.stderr}`);
  if (!r.stdout.includes(`imported ${records} users`)) throw new Error(`the import did not create every record: ${r.stdout}`);
  return { seconds, peakMb: Number(r.stderr.trim().split('\n').pop()) / 1024 };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-import-'));
  try {
    const files = writeFiles(dir);
    const engines: ('sqlite' | 'mysql')[] = /^(mysql|mariadb):/.test(process.env.DATABASE_URL ?? '') ? ['sqlite', 'mysql'] : ['sqlite'];
    process.stdout.write(`\n${os.cpus().length} cores, node ${process.version}, ${records} records per import\n\n`
      + '| engine | bcrypt hashes: records/s | no password (baseline): records/s | ÷ baseline | peak memory of the command |\n|---|---|---|---|---|\n');
    let n = 0;
    for (const engine of engines) {
      const hashed = await importOnce(engine, dir, n++, files.hashed);
      const plain = await importOnce(engine, dir, n++, files.plain);
      const rate = (r: Run) => records / r.seconds;
      process.stdout.write(`| ${engine === 'sqlite' ? 'SQLite (embedded)' : 'MariaDB'} | ${rate(hashed).toFixed(0)} | ${rate(plain).toFixed(0)} | ${(rate(hashed) / rate(plain)).toFixed(2)} | ${Math.max(hashed.peakMb, plain.peakMb).toFixed(0)} MB |\n`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    if (/^(mysql|mariadb):/.test(process.env.DATABASE_URL ?? '')) {
      const server = new URL(process.env.DATABASE_URL!);
      server.pathname = '/';
      const admin = await mysql.createConnection(server.toString());
      for (let n = 0; n < 4; n++) await admin.query(`DROP DATABASE IF EXISTS gatehouse_bench_import_${n}`);
      await admin.end();
    }
  }
}

void main();
