import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestBackend } from './backend';
import { freePort, ownServer, redisCli, until } from './processes';
import { startSmtp } from './smtp';

export { redisCli };

/** A Redis server of a test's own; `dir` takes the snapshot a replica's first sync writes. */
const redis = (port: number, dir: string, ...extra: string[]) => ownServer('redis-server', [
  '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra,
], () => redisCli(port, 'ping') === 'PONG', () => fs.mkdirSync(dir, { recursive: true }));

/**
 * A Redis master, its replica and one Sentinel (quorum 1 is enough to fail over; production runs
 * three or more) of a test's own, started and in sync, the Sentinel monitoring the master as `gh`:
 * REDIS_URL `redis+sentinel://127.0.0.1:SENTINEL/gh`. `servers` are the master, the replica and the
 * Sentinel, each to kill and start again; `stop` kills them and removes their folder.
 */
export async function startSentinelTopology(name: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `gatehouse-${name}-`));
  const ports = { master: await freePort(), replica: await freePort(), sentinel: await freePort() };
  const conf = path.join(dir, 'sentinel.conf');
  const servers = [
    redis(ports.master, path.join(dir, 'master')),
    redis(ports.replica, path.join(dir, 'replica'), '--replicaof', '127.0.0.1', String(ports.master)),
    ownServer('redis-server', [conf, '--sentinel'], () => redisCli(ports.sentinel, 'ping') === 'PONG', () => fs.writeFileSync(conf, [
      `port ${ports.sentinel}`, 'bind 127.0.0.1', `dir ${dir}`,
      `sentinel monitor gh 127.0.0.1 ${ports.master} 1`, 'sentinel down-after-milliseconds gh 1000', 'sentinel failover-timeout gh 10000',
    ].join('\n'))),
  ];
  const stop = async () => {
    for (const s of servers) await s.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const s of servers) await s.start();
    await until('the replica is in sync', () => /master_link_status:up/.test(redisCli(ports.replica, 'info', 'replication')));
    await until('the Sentinel knows the replica', () => redisCli(ports.sentinel, 'sentinel', 'replicas', 'gh').includes(String(ports.replica)));
  } catch (e) {
    await stop();
    throw e;
  }
  return { dir, ports, servers, url: `redis+sentinel://127.0.0.1:${ports.sentinel}/gh`, stop };
}

/**
 * A Sentinel topology (startSentinelTopology), an SMTP server and a test backend on it (REDIS_URL
 * through the Sentinel, emails to that SMTP server), with `env` added; `stop` ends all three.
 */
export async function startSentinelBackend(name: string, env: NodeJS.ProcessEnv) {
  const topology = await startSentinelTopology(name);
  const smtp = await startSmtp();
  const backend = await createTestBackend({
    env: { REDIS_URL: topology.url, MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, OUTBOX_RELAY_AFTER_SECONDS: '2', LOG_LEVEL: 'info', ...env },
  });
  return {
    ...topology, smtp, backend,
    async stop() {
      await topology.stop();
      await smtp.close();
      await backend.cleanup();
    },
  };
}
export type SentinelBackend = Awaited<ReturnType<typeof startSentinelBackend>>;
