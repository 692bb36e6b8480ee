import { readdirSync, readFileSync } from 'node:fs';

/*
 * Where the CPU of a scenario goes, from /proc (Linux): CPU time and minor page faults of each
 * watched process, a node process split into its event loop and its other threads (the libuv
 * pool, where argon2 runs, and V8's helpers; node 20 does not name them apart).
 * BENCH_WATCH="mariadb=PID redis=PID" adds the database and Redis.
 */
interface Sample { cpuMs: number; sysMs: number; faults: number }
export type Snapshot = Map<string, Sample>;

const tick = 1000 / 100; // USER_HZ is 100 on Linux

function stat(file: string): Sample | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined; // the process or thread is gone
  }
  const f = text.slice(text.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
  return { cpuMs: (Number(f[11]) + Number(f[12])) * tick, sysMs: Number(f[12]) * tick, faults: Number(f[7]) };
}

function add(into: Snapshot, name: string, s: Sample): void {
  const prev = into.get(name) ?? { cpuMs: 0, sysMs: 0, faults: 0 };
  into.set(name, { cpuMs: prev.cpuMs + s.cpuMs, sysMs: prev.sysMs + s.sysMs, faults: prev.faults + s.faults });
}

/** Per-thread figures of `pid`, grouped as "<label> event loop" and "<label> threads". */
function threads(into: Snapshot, label: string, pid: number): void {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return;
  }
  for (const tid of tids) {
    const s = stat(`/proc/${pid}/task/${tid}/stat`);
    if (!s) continue;
    add(into, `${label} ${Number(tid) === pid ? 'event loop' : 'threads'}`, s);
  }
}

function watched(): Array<[string, number]> {
  return (process.env.BENCH_WATCH ?? '').split(/\s+/).filter(Boolean).map((pair) => {
    const [name, pid] = pair.split('=');
    return [name, Number(pid)] as [string, number];
  });
}

/** A process whose CPU a scenario reports: a node process is split into event loop and threads. */
export interface Watched { label: string; pid: number; node?: boolean }

/** CPU so far of each process of `processes`, this process, and the BENCH_WATCH processes. */
export function snapshotOf(processes: Watched[]): Snapshot {
  const out: Snapshot = new Map();
  for (const p of processes) {
    if (p.node) threads(out, p.label, p.pid);
    else {
      const s = stat(`/proc/${p.pid}/stat`);
      if (s) add(out, p.label, s);
    }
  }
  threads(out, 'bench', process.pid);
  for (const [name, pid] of watched()) {
    const s = stat(`/proc/${pid}/stat`);
    if (s) add(out, name, s);
  }
  return out;
}

/** CPU so far of the server's processes (when given), this process, and the BENCH_WATCH processes. */
export function snapshot(serverPids: number | number[] = []): Snapshot {
  return snapshotOf([serverPids].flat().map((pid) => ({ label: 'server', pid, node: true })));
}

/** CPU ms (of which in the kernel) and minor page faults per operation between two snapshots. */
export function perOperation(before: Snapshot, after: Snapshot, operations: number): string {
  const rows: string[] = [];
  let total = 0;
  for (const [name, a] of after) {
    const b = before.get(name) ?? { cpuMs: 0, sysMs: 0, faults: 0 };
    const cpu = (a.cpuMs - b.cpuMs) / operations;
    const sys = (a.sysMs - b.sysMs) / operations;
    total += cpu;
    if (cpu >= 0.05) rows.push(`${name} ${cpu.toFixed(2)} ms (kernel ${sys.toFixed(2)}), ${Math.round((a.faults - b.faults) / operations)} faults`);
  }
  return `CPU per operation ${total.toFixed(2)} ms: ${rows.join('; ')}`;
}
