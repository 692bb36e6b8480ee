import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Started } from './processes';

// What an outage soak measures of a process (test/cluster/redis-outage.test.ts,
// test/e2e/redis-outage.test.ts): its resident memory and CPU time, from /proc.

/**
 * NODE_OPTIONS for a soaked process: a young generation of 1 MB (V8 otherwise touches its pages for
 * the first time over the first minutes of an idle process, up to its size, some 20 MB, once), and
 * soak-collect.js, which collects the garbage when a sample is taken (sample). Without it, the
 * garbage of an outage's retries grows the old generation by tens of MB until V8 collects it, more
 * or less soon with the heap's size: a soak of minutes would read that as growth, or miss a leak
 * behind a collection that happened to come. What the process keeps shows all the same.
 */
export const SOAK_NODE_OPTIONS = `--max-semi-space-size=1 --require ${JSON.stringify(path.join(__dirname, 'soak-collect.js'))}`;

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** Whether a process catches SIGUSR2 (soak-collect.js is loaded): bit 12 of SigCgt in its /proc status. */
const collects = (status: string) => ((BigInt(`0x${/SigCgt:\s+([0-9a-f]+)/.exec(status)?.[1] ?? '0'}`) >> 11n) & 1n) === 1n;

/**
 * A process's resident memory (MB) and the CPU time it has used so far (s); a process started with
 * SOAK_NODE_OPTIONS first collects its garbage (and the CPU time is read before it does).
 */
export async function sample(pid: number) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from field 3 (state) on
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime + stime
  const at = Date.now();
  if (collects(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))) {
    process.kill(pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 300)); // a full collection of a heap of 100 MB takes tens of ms
  }
  const rssMb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
  return { at, cpuSeconds, rssMb };
}
export type Sample = Awaited<ReturnType<typeof sample>>;

/** Samples each of `pids` every 5 s for `ms`, and once more at the end, into `into` (by the same names). */
export async function sampleFor<K extends string>(ms: number, pids: Record<K, number>, into: Record<K, Sample[]>): Promise<void> {
  /** One sample of every process; answers the time before the first of them was read. */
  const take = async () => {
    const before = Date.now();
    for (const name of Object.keys(pids) as K[]) into[name].push(await sample(pids[name]));
    return before;
  };
  await take();
  // from the first samples' time (read before `end`), and up to a round taken at `end` or later:
  // every series spans `ms` at least, whatever the timers' precision
  const end = Date.now() + ms;
  for (let last = 0; last < end;) {
    await new Promise((r) => setTimeout(r, Math.min(5_000, Math.max(0, end - Date.now()))));
    last = await take();
  }
}

/**
 * Over `samples` (every few seconds): the CPU used, in % of one core, and how much the memory grew
 * from `baseline`'s start (the least of its first four samples) to the least of the last four: a
 * collection's drop counts for nothing, while a leak shows in every sample.
 */
export function figures(samples: Sample[], baseline: Sample[] = samples) {
  const first = baseline.slice(0, 4).map((s) => s.rssMb);
  const last = samples.slice(-4).map((s) => s.rssMb);
  const a = samples[0];
  const b = samples[samples.length - 1];
  return {
    cpuPercent: Math.round(((b.cpuSeconds - a.cpuSeconds) / ((b.at - a.at) / 1000)) * 1000) / 10,
    rssMb: [Math.round(Math.min(...first)), Math.round(Math.min(...last))],
    growthMb: Math.round((Math.min(...last) - Math.min(...first)) * 10) / 10,
  };
}

/** SIGTERM: how long the process took to exit, and its exit code. */
export async function terminate(p: Started): Promise<{ code: number | null; ms: number }> {
  const t0 = Date.now();
  const code = await p.stop();
  return { code, ms: Date.now() - t0 };
}
