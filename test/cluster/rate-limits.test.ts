import { randomBytes } from 'node:crypto';
import { createRateLimiter } from '../../src/domain/rate-limit';
import { connectRedis, type RedisConnection } from '../../src/queue/redis';
import { BUDGET_KEYS } from '../../src/domain/budget-keys';
import { skipUnless } from '../helpers/backend';

// The rate limits on a Redis Cluster of three masters, as two api pods reach it: one script's keys
// share a slot (each key tagged by its application), budgets and the turns of slowed device codes
// are shared by the pods, and applications spread over the masters.

const redisCluster = process.env.REDIS_CLUSTER_URL;

skipUnless(redisCluster !== undefined, 'the Redis Cluster rate-limit tests need REDIS_CLUSTER_URL (.ci/cluster.sh)')('rate limits on a Redis Cluster', () => {
  let pods: RedisConnection[] = [];
  const ready = (redis: RedisConnection) => new Promise((resolve, reject) => {
    redis.once('ready', resolve);
    redis.once('error', reject);
  });
  beforeAll(async () => {
    pods = [connectRedis(redisCluster!), connectRedis(redisCluster!)];
    await Promise.all(pods.map(ready));
  });
  afterAll(async () => {
    await Promise.all(pods.map((p) => p.quit().catch(() => undefined)));
  });

  it('two pods share an account\'s and an address\'s budgets, taken in one script, for applications on different masters', async () => {
    const prefix = `test-${randomBytes(4).toString('hex')}`;
    const limiters = pods.map((redis) => createRateLimiter({ redis, prefix }));
    for (const app of [1, 2, 3, 4, 5, 6]) {
      const budgets: Parameters<(typeof limiters)[0]['take']>[0] = [
        [BUDGET_KEYS.loginAccount(app, 'ada'), { max: 5, windowSeconds: 60 }],
        [BUDGET_KEYS.loginAddress(app, '203.0.113.7'), { max: 50, windowSeconds: 60 }],
      ];
      const outcomes = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => limiters[i % 2].take(budgets)));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(5);
    }
  });

  it('the turns of slowed device codes are booked by both pods in one line: a delay apart, at most `waiting` ahead', async () => {
    const prefix = `test-${randomBytes(4).toString('hex')}`;
    const limiters = pods.map((redis) => createRateLimiter({ redis, prefix }));
    const spacing = { delayMs: 2_000, waiting: 4 };
    const booked = await Promise.all(Array.from({ length: 7 }, (_, i) => limiters[i % 2].turn(BUDGET_KEYS.deviceTurn(9, '198.51.100.3'), spacing)));
    expect(booked.filter((w) => w === undefined)).toHaveLength(3);
    const waits = booked.filter((w): w is number => w !== undefined).sort((a, b) => a - b);
    for (const [i, w] of waits.entries()) expect(Math.abs(w - (i + 1) * spacing.delayMs)).toBeLessThan(300);
  });
});
