import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import mysql from 'mysql2/promise';

/**
 * What the benchmarks of single queries and commands share: a fresh database of an engine, and a
 * query's timing (median and 99th percentile after a warm-up).
 */

/** The environment of a fresh database: a data folder for SQLite, or a new database `name` on the MariaDB server of DATABASE_URL. */
export async function freshDatabase(engine: 'sqlite' | 'mysql', dir: string, name: string): Promise<NodeJS.ProcessEnv> {
  const { DATABASE_URL: url, REDIS_URL: _r, ...rest } = process.env;
  const data = path.join(dir, `data-${engine}-${name}`);
  if (engine === 'sqlite') return { ...rest, DATA_DIR: data };
  const server = new URL(url!);
  server.pathname = '/';
  const admin = await mysql.createConnection(server.toString());
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await admin.end();
  server.pathname = `/${name}`;
  return { ...rest, DATA_DIR: data, DATABASE_URL: server.toString(), MAIL_TRANSPORT: 'file' };
}

/** `run` timed `times` times after 20 to warm up: its median and 99th percentile in ms, and what its last run answered. */
export async function timed<T>(run: () => Promise<T>, times: number): Promise<{ median: number; p99: number; last: T }> {
  let last = await run();
  for (let i = 1; i < 20; i++) last = await run();
  const spent: number[] = [];
  for (let i = 0; i < times; i++) {
    const t = performance.now();
    last = await run();
    spent.push(performance.now() - t);
  }
  spent.sort((a, b) => a - b);
  return { median: spent[Math.floor(spent.length / 2)], p99: spent[Math.floor(spent.length * 0.99)], last };
}

/**
 * A benchmark's run on the embedded default and, when DATABASE_URL names MariaDB/MySQL, there too:
 * `measure` on each engine in a temporary folder (`prepare` writes what both share into it first),
 * its lines printed, the folder removed; a failure exits 1.
 */
export function onEachEngine(name: string, measure: (engine: 'sqlite' | 'mysql', dir: string) => Promise<string[]>, prepare?: (dir: string) => void): void {
  const run = async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `gatehouse-bench-${name}-`));
    try {
      prepare?.(dir);
      const engines: ('sqlite' | 'mysql')[] = /^(mysql|mariadb):/.test(process.env.DATABASE_URL ?? '') ? ['sqlite', 'mysql'] : ['sqlite'];
      const out: string[] = [];
      for (const engine of engines) out.push(...await measure(engine, dir), '');
      process.stdout.write(`${out.join('\n')}\n`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  run().catch((e: Error) => {
    process.stderr.write(`${e.stack}\n`);
    process.exit(1);
  });
}
