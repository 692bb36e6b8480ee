import { base, duration, form, measure, startBenchServer, table, type Figures } from './harness';

/*
 * Token benchmarks: the refresh_token grant (rotation persisted in the database) and
 * /access/getAccessToken, each beside GET /bench/baseline of the same server, with the same
 * connections and duration, in one run. Needs DATABASE_URL (MariaDB/MySQL), REDIS_URL and
 * SECRET_KEY, as production does:  npm run bench
 */
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

async function main(): Promise<void> {
  const bench = await startBenchServer();
  try {
    const user = await form('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'bench@example.com' }) }, bench.owner);

    // live refresh tokens: each request takes one, each answer returns its successor (autocannon
    // resets a connection's context between requests, so the tokens circulate through this pool)
    const pool: string[] = [];
    let failures = 0;
    for (let i = 0; i < connections * 2; i++) {
      const code = await form('/access/getAuthorizationCode', { type_name: 'user', uuid: user.uuid, redirect_uri: 'https://bench.example.com/', lifetime: '600', for_client_id: bench.loginId }, bench.owner);
      const pair = await form('/oauth/token', { grant_type: 'authorization_code', code: code.authorizationCode, redirect_uri: 'https://bench.example.com/' }, bench.login);
      pool.push(pair.refresh_token);
    }

    const only = !!process.env.BENCH_ONLY_REFRESH;
    const results: Figures[] = [];
    if (!only) results.push(await measure('baseline GET /bench/baseline', connections, { url: `${base}/bench/baseline` }));
    results.push(await measure('POST /oauth/token grant_type=refresh_token', connections, {
      url: base,
      requests: [{
        method: 'POST',
        path: '/oauth/token',
        headers: { authorization: bench.login, 'content-type': 'application/x-www-form-urlencoded' },
        setupRequest: (req) => ({ ...req, body: `grant_type=refresh_token&refresh_token=${pool.shift() ?? 'pool-empty'}` }),
        onResponse: (status, body) => {
          if (status === 200) pool.push(JSON.parse(body).refresh_token);
          else if (failures++ < 5) process.stderr.write(`refresh answered ${status}: ${body}\n`);
        },
      }],
    }));
    if (!only) {
      results.push(await measure('GET /access/getAccessToken', connections, {
        url: `${base}/access/getAccessToken?type_name=user&uuid=${user.uuid}`,
        headers: { authorization: bench.owner },
      }));
    }
    results.push(await measure('baseline GET /bench/baseline (again)', connections, { url: `${base}/bench/baseline` }));

    const baseline = (results[0].rps + results[results.length - 1].rps) / 2;
    process.stdout.write(`\n${connections} connections, ${duration} s each, node ${process.version}\n\n${table(results, baseline, 'baseline')}\n\n`);
    for (const r of results) process.stdout.write(`${r.name}: ${r.cpu}\n`);
  } finally {
    await bench.stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
