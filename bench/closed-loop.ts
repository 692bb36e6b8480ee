import http from 'node:http';

/*
 * A closed-loop load generator: each connection sends its next request only when the previous
 * answer is in, on its own keep-alive socket, and may carry state from one answer into its next
 * request (a refresh token chained from rotation to rotation). The same client drives every
 * server a benchmark compares, so none gets a cheaper client than another.
 */
export interface LoopRequest { method: 'GET' | 'POST'; path: string; headers: Record<string, string>; body?: string }

export interface LoopResult { total: number; rps: number; p50: number; p99: number; failed: number; firstFailure?: string; /** The longest wait for one answer, ms. */ max?: number }

export async function closedLoop<C>(options: {
  url: string;
  connections: number;
  seconds: number;
  /** Each connection's own state, made once. */
  context: (connection: number) => C;
  request: (context: C) => LoopRequest;
  /** Whether the answer is a success; it may update the connection's state. */
  answer: (context: C, status: number, body: string) => boolean;
}): Promise<LoopResult> {
  const target = new URL(options.url);
  const latencies: number[] = [];
  let failed = 0;
  let firstFailure: string | undefined;
  const end = Date.now() + options.seconds * 1000;
  const started = process.hrtime.bigint();

  const send = (agent: http.Agent, r: LoopRequest) => new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request({
      host: target.hostname, port: target.port, method: r.method, path: r.path, agent,
      headers: { ...r.headers, ...(r.body !== undefined && { 'content-length': Buffer.byteLength(r.body) }) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(r.body);
  });

  await Promise.all(Array.from({ length: options.connections }, async (_, n) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const context = options.context(n);
    try {
      while (Date.now() < end) {
        const t0 = process.hrtime.bigint();
        let ok = false;
        try {
          const { status, body } = await send(agent, options.request(context));
          ok = options.answer(context, status, body);
          if (!ok) firstFailure ??= `${status} ${body.slice(0, 300)}`;
        } catch (e) {
          firstFailure ??= (e as Error).message;
        }
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (!ok) failed++;
      }
    } finally {
      agent.destroy();
    }
  }));
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => (latencies.length ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] * 10) / 10 : 0);
  return { total: latencies.length, rps: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), failed, firstFailure, max: at(1) };
}
