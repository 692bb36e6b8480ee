import { stuckWorkerJudge, type QueueSample } from '../../src/queue/bullmq';

/** Feeds the judge one sample every 5 s, from 0 s on, and says which ones it judged stuck. */
function judge(samples: Omit<QueueSample, 'now' | 'concurrency'>[], stuckAfterMs = 30_000, concurrency = 4): boolean[] {
  const stuck = stuckWorkerJudge(stuckAfterMs);
  return samples.map((s, i) => stuck({ now: i * 5_000, concurrency, ...s }));
}

const idle = { waiting: 3, active: 0, started: 7 };

describe('stuckWorkerJudge: a queue worker is judged stuck only when it has room, jobs wait and none starts', () => {
  it('judges stuck once the condition has held for the whole window, then starts counting again', () => {
    // samples at 0 s … 35 s: held from the second sample (5 s) on, so stuck at 35 s
    expect(judge(Array(8).fill(idle))).toEqual([false, false, false, false, false, false, false, true]);
    expect(judge(Array(15).fill(idle)).filter(Boolean)).toHaveLength(2);
  });

  it('a worker that starts jobs, however slowly, is not stuck', () => {
    const slow = Array.from({ length: 20 }, (_, i) => ({ ...idle, started: 7 + Math.floor(i / 5) }));
    expect(judge(slow)).not.toContain(true);
  });

  it('a worker with no room (every slot busy with long jobs) is not stuck', () => {
    expect(judge(Array(20).fill({ ...idle, active: 4 }))).not.toContain(true);
  });

  it('nothing waiting is nothing to judge, and it resets the window', () => {
    const gap = [...Array(6).fill(idle), { ...idle, waiting: 0 }, ...Array(6).fill(idle)];
    expect(judge(gap)).not.toContain(true);
    expect(judge([...gap, idle, idle])).toContain(true);
  });
});
