import { createLogger } from '../../src/logger';
import { quietRedisErrors } from '../../src/queue/redis';

// While Redis is unreachable every connection (and BullMQ's queues and workers after it) reports
// each failed attempt: the log gets the first of each, then one line a minute with the count.

it('logs the first of each error at once, then one line per period with how many were left out', () => {
  jest.useFakeTimers({ now: 0 });
  try {
    const lines: Record<string, unknown>[] = [];
    const warn = quietRedisErrors(createLogger('info', { write: (line: string) => lines.push(JSON.parse(line)) }), 60_000);
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:6379');
    for (let i = 0; i < 100; i++) warn('queue error', refused, { queue: 'mail' });
    warn('queue error', refused, { queue: 'versions' }); // another queue: its own line
    warn('worker error', new Error('Failed to refresh slots cache.'), { queue: 'mail' });
    expect(lines.map((l) => [l.msg, l.queue, l.err, l.repeated])).toEqual([
      ['queue error', 'mail', refused.message, undefined],
      ['queue error', 'versions', refused.message, undefined],
      ['worker error', 'mail', 'Failed to refresh slots cache.', undefined],
    ]);
    jest.setSystemTime(59_999);
    warn('queue error', refused, { queue: 'mail' });
    expect(lines).toHaveLength(3);
    jest.setSystemTime(60_000);
    warn('queue error', refused, { queue: 'mail' });
    expect(lines[3]).toMatchObject({ msg: 'queue error', queue: 'mail', err: refused.message, repeated: 100 });
  } finally {
    jest.useRealTimers();
  }
});

it('keeps at most a bounded number of kinds in mind, whatever the errors say', () => {
  const lines: string[] = [];
  const warn = quietRedisErrors(createLogger('info', { write: (line: string) => lines.push(line) }));
  for (let i = 0; i < 1_000; i++) warn('redis connection error', new Error(`connect ECONNREFUSED 10.0.0.${i}:6379`));
  expect(lines).toHaveLength(1_000); // each a kind of its own, each logged once
  warn('redis connection error', new Error('connect ECONNREFUSED 10.0.0.999:6379'));
  expect(lines).toHaveLength(1_000); // the newest are still in mind
});
