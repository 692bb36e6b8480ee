import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import IORedis from 'ioredis';
import { skipUnless } from '../helpers/backend';
import { freePort, ownServer, until, ownRedis, redisServerInstalled as redisServer } from '../helpers/processes';
import { createLogger } from '../../src/logger';
import { createRedisClientChanges } from '../../src/queue/client-changes';
import { backoffMs, subscribeRedis, type Subscription } from '../../src/queue/subscriber';

// The subscription of client changes (src/queue/subscriber.ts): one connection at a time, a pause
// between attempts that doubles, the next node on each attempt; against a real redis-server that is
// stopped and started again, and against nodes that accept connections and close them at once.


/** A Redis of this test's own, killed (SIGKILL) and started again. */

/** A TCP server that accepts every connection and closes it at once (a node that goes away as soon as it is reached); counts them. */
async function closingServer() {
  let accepted = 0;
  const server = net.createServer((socket) => {
    accepted++;
    socket.destroy();
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { port, accepted: () => accepted, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const redisCli = (port: number, ...args: string[]) => spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).stdout.trim();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('backoffMs', () => {
  const backoff = { firstMs: 100, maxMs: 1_000 };
  it('doubles from the first pause up to the longest, each drawn from half to all of it', () => {
    expect([1, 2, 3, 4, 5, 50].map((n) => backoffMs(n, backoff, () => 1))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect([1, 2, 5].map((n) => backoffMs(n, backoff, () => 0))).toEqual([50, 100, 500]);
  });
});

skipUnless(redisServer, 'the cluster subscription test needs the redis-server program')('client changes on a Redis Cluster whose every master stops', () => {
  let dir: string;
  const nodes: { port: number; server: ReturnType<typeof ownServer> }[] = [];
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-subscriber-'));
    for (let i = 0; i < 3; i++) {
      // a port found free may be taken before the server binds it (another process's outgoing
      // connection gets it as its local port): a node that cannot bind tries two more pairs of ports
      for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const bus = await freePort();
        const server = ownServer('redis-server', [
          '--port', String(port), '--cluster-port', String(bus), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
          '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--cluster-node-timeout', '2000', '--save', '', '--appendonly', 'no', '--dir', dir,
        ], () => redisCli(port, 'ping') === 'PONG');
        try {
          await server.start();
        } catch (e) {
          if (attempt >= 3) throw e;
          continue;
        }
        nodes.push({ port, server });
        break;
      }
    }
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8' });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed:\n${created.stdout}${created.stderr}`);
    await until('the cluster is up', () => nodes.every((n) => /cluster_state:ok/.test(redisCli(n.port, 'cluster', 'info'))));
  }, 60_000);
  afterAll(async () => {
    for (const n of nodes) await n.server.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('tries again a few times a second at most while they are down (ioredis\'s cluster subscriber: thousands), and is live again once they are back', async () => {
    const changes = createRedisClientChanges(`redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`, 'ghsub', createLogger('silent'));
    const connects = jest.spyOn(net, 'createConnection');
    try {
      let forgotten = 0;
      const subscription = changes.subscribe({ forget: () => undefined, forgetAll: () => forgotten++ });
      await until('the subscription is live', () => subscription.live(), 10_000);
      for (const n of nodes) await n.server.kill();
      await sleep(1_000);
      connects.mockClear();
      await sleep(8_000);
      // pauses of 250 ms doubling to 5 s, each drawn from half to all of it: from 1 s to 9 s after the
      // stop, 2 attempts at the fewest even with every pause its longest and a loaded machine's delays
      // (at 1.75 s, 3.75 s and 7.75 s, plus the time each takes to fail), each to the next node
      expect(connects.mock.calls.length).toBeGreaterThanOrEqual(2);
      expect(connects.mock.calls.length).toBeLessThan(30);
      expect(subscription.live()).toBe(false);

      // (counted before the first node starts: the subscription may be live again before the last has)
      const before = forgotten;
      for (const n of nodes) await n.server.start();
      await until('the subscription is live again', () => subscription.live(), 15_000);
      expect(forgotten).toBeGreaterThan(before); // what changed meanwhile is forgotten
    } finally {
      connects.mockRestore();
      changes.close();
    }
  }, 60_000);
});

skipUnless(redisServer, 'the subscriber tests need the redis-server program')('subscribeRedis against a redis-server stopped and started again', () => {
  const backoff = { firstMs: 100, maxMs: 400 };
  let port: number;
  let redis: ReturnType<typeof ownRedis>;
  let publisher: IORedis;
  beforeAll(async () => {
    port = await freePort();
    redis = ownRedis(port);
    await redis.start();
    publisher = new IORedis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, lazyConnect: true });
    publisher.on('error', () => undefined);
  });
  afterAll(async () => {
    publisher.disconnect();
    await redis.kill();
  });

  /** A subscription to `url` that records what it is told. */
  const subscribe = (url: string) => {
    const seen = { messages: [] as string[], live: 0, down: 0, failed: [] as { node: string; retryInMs: number; at: number }[] };
    const subscription = subscribeRedis(url, 'ghsub:changes', {
      message: (m) => seen.messages.push(m),
      live: () => seen.live++,
      down: () => seen.down++,
      failed: (_err, node, retryInMs) => seen.failed.push({ node, retryInMs, at: Date.now() }),
    }, { backoff });
    return { subscription, seen };
  };
  /** Publishes until `subscription` has received one (a message sent before SUBSCRIBE was answered is lost, as pub/sub is). */
  const delivered = async (subscription: Subscription, seen: { messages: string[] }, message: string) => {
    await until('the subscription is live', () => subscription.live(), 10_000);
    await until(`"${message}" is received`, async () => {
      await publisher.publish('ghsub:changes', message);
      return seen.messages.includes(message);
    }, 10_000);
  };

  it('is live, loses its connection when the server dies, waits longer after each failure, and is live again once the server is back', async () => {
    const { subscription, seen } = subscribe(`redis://127.0.0.1:${port}`);
    try {
      await delivered(subscription, seen, 'before');
      expect(seen.live).toBe(1);

      await redis.kill();
      await until('the subscription is down', () => seen.down === 1 && !subscription.live(), 5_000);
      await sleep(2_500);
      // pauses of 100 ms after the drop, then 200, 400, 400, … ms after each failed attempt (each
      // drawn from half to all of it): a handful of attempts, never a loop
      const failed = seen.failed.length;
      expect(failed).toBeGreaterThanOrEqual(4);
      expect(failed).toBeLessThanOrEqual(2_500 / (backoff.firstMs / 2) + 1);
      const pauses = seen.failed.slice(0, 4).map((f) => f.retryInMs);
      expect(pauses.map((ms, i) => ms >= [100, 200, 200, 200][i] && ms <= [200, 400, 400, 400][i])).toEqual([true, true, true, true]);
      expect(subscription.live()).toBe(false);

      await redis.start();
      await delivered(subscription, seen, 'after');
      expect(seen.live).toBe(2);
      expect(seen.messages).toEqual(expect.arrayContaining(['before', 'after']));
    } finally {
      subscription.close();
    }
  });

  it('on a cluster URL goes to the next node after each failure, and subscribes on the one that answers', async () => {
    const dead = await freePort(); // nothing listens there: refused at once
    const closing = await closingServer();
    const { subscription, seen } = subscribe(`redis+cluster://127.0.0.1:${dead},127.0.0.1:${closing.port},127.0.0.1:${port}`);
    try {
      // (a redis-server outside cluster mode refuses CLUSTER SLOTS: the subscription goes on without the other nodes)
      await delivered(subscription, seen, 'on the third');
      expect(subscription.node()).toBe(`127.0.0.1:${port}`);
      expect(seen.failed.map((f) => f.node)).toEqual([`127.0.0.1:${dead}`, `127.0.0.1:${closing.port}`]);
      expect(closing.accepted()).toBe(1);
    } finally {
      subscription.close();
      await closing.close();
    }
  });

  it('stops trying once closed', async () => {
    const dead = await freePort();
    const { subscription, seen } = subscribe(`redis://127.0.0.1:${dead}`);
    await until('a first attempt failed', () => seen.failed.length > 0, 5_000);
    subscription.close();
    const after = seen.failed.length;
    await sleep(1_000);
    expect(seen.failed.length).toBe(after);
  });
});
