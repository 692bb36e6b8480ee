import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { formatSignatureDate } from '../../src/domain/signature';
import { childEnv, cli, freePort, ROOT, SERVER, startNode, WORKER } from '../helpers/processes';
import { basic, get, post } from '../helpers/http-calls';
import { onMysql, skipUnless } from '../helpers/backend';
import { resolveLocalhostNames } from '../helpers/browser';


// the embedded default whatever the suite's database (the processes get no DATABASE_URL): run with the suite on the embedded default
skipUnless(!onMysql, 'the embedded default\'s processes run with the suite on the embedded default')('the embedded default, as a newcomer runs it (npm start)', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-embedded-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('first start: migrates, creates the local application, prints its clients and a curl that works', async () => {
    const port = await freePort();
    const server = startNode(SERVER, { cwd: dir, env: { PORT: String(port) } });
    try {
      await server.waitFor(/gatehouse api listening/);
      // the output is no terminal here (as under a log collector): ids, never secrets
      const [, ownerId] = server.output().match(/owner client\s+client_id=(\w+)\n/)!;
      expect(server.output()).toMatch(/login client\s+client_id=\w+\n/);
      expect(server.output()).not.toContain('client_secret');
      const curl = server.output().match(/curl -u (\w+):OWNER_SECRET '(http:\/\/localhost:\d+\/clients\/list)'/)!;
      expect(curl[1]).toBe(ownerId);
      expect(server.output()).toContain('Read them with: npx gatehouse clients:list --app local');
      const listedByCli = JSON.parse(cli(['clients:list', '--app', 'local'], { cwd: dir, env: {} }).stdout) as { client_id: string; client_secret: string }[];
      const ownerSecret = listedByCli.find((c) => c.client_id === ownerId)!.client_secret;

      const listed = await get(`http://127.0.0.1:${port}/clients/list`, { Authorization: basic(ownerId, ownerSecret) });
      expect(listed.body.stat).toBe('ok');
      expect(listed.body.results).toHaveLength(2);

      // the same call signed with the Signature scheme (HMAC by openssl)
      const date = formatSignatureDate(new Date());
      const sig = execFileSync('openssl', ['dgst', '-sha1', '-hmac', ownerSecret, '-binary'], { input: `/clients/list\n${date}\n` }).toString('base64');
      const signed = await get(`http://127.0.0.1:${port}/clients/list`, { Date: date, Authorization: `Signature ${ownerId}:${sig}` });
      expect(signed.body.stat).toBe('ok');

      expect(fs.statSync(path.join(dir, 'var/secret.key')).mode & 0o777).toBe(0o600);
      expect(fs.existsSync(path.join(dir, 'var/gatehouse.sqlite'))).toBe(true);
      expect(fs.existsSync(path.join(dir, 'var/gatehouse.sqlite-wal'))).toBe(true);
      expect(server.output()).not.toContain(ownerSecret);

      // an OpenID provider from the first start: its discovery document and its keys (made at the start)
      const discovery = await get(`http://127.0.0.1:${port}/.well-known/openid-configuration`, { Host: `localhost:${port}` });
      expect(discovery.body).toMatchObject({ issuer: `http://localhost:${port}`, jwks_uri: `http://localhost:${port}/oidc/jwks` });
      const jwks = await get(`http://127.0.0.1:${port}/oidc/jwks`, {});
      expect((jwks.body as { keys: unknown[] }).keys).toHaveLength(4);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('a second instance on the same data folder refuses to start and says how to run one (its own DATA_DIR and PORT)', async () => {
    const first = startNode(SERVER, { cwd: dir, env: { PORT: String(await freePort()) } });
    try {
      await first.waitFor(/gatehouse api listening/);
      const second = startNode(SERVER, { cwd: dir, env: { PORT: String(await freePort()) } });
      expect(await second.exited).toBe(1);
      expect(second.output()).toContain(`another Gatehouse api (pid ${first.child.pid}) uses`);
      expect(second.output()).toContain('DATA_DIR=var/second PORT=3001 npm start');
    } finally {
      expect(await first.stop()).toBe(0);
    }
    // stopped, it lets the folder go: the next start holds it
    const next = startNode(SERVER, { cwd: dir, env: { PORT: String(await freePort()) } });
    try {
      await next.waitFor(/gatehouse api listening/);
    } finally {
      expect(await next.stop()).toBe(0);
    }
  });

  it('a restart keeps the data and the secrets; the CLI works on the same files', async () => {
    const port = await freePort();
    const server = startNode(SERVER, { cwd: dir, env: { PORT: String(port) } });
    try {
      await server.waitFor(/gatehouse api listening/);
      expect(server.output()).not.toContain('client_secret=');
      const clients = JSON.parse(cli(['clients:list', '--app', 'local'], { cwd: dir, env: {} }).stdout);
      const owner = clients.find((c: { features: string[] }) => c.features.includes('owner'));
      const listed = await get(`http://127.0.0.1:${port}/clients/list`, { Authorization: basic(owner.client_id, owner.client_secret) });
      expect(listed.body.stat).toBe('ok');

      const created = cli(['apps:create', 'demo', '--json'], { cwd: dir, env: {} });
      expect(created.status).toBe(0);
      const demo = JSON.parse(created.stdout);
      expect(demo).toEqual({
        app: 'demo',
        flow: { name: 'standard', version: 1 },
        clients: {
          owner: { client_id: expect.stringMatching(/^\w{32}$/), client_secret: expect.stringMatching(/^\w{32}$/) },
          login: { client_id: expect.stringMatching(/^\w{32}$/), client_secret: expect.stringMatching(/^\w{32}$/) },
        },
      });
      // the new application is served by the running process, on its own host name
      await new Promise((r) => setTimeout(r, 5_100)); // the application cache lives 5 s
      const demoList = await get(`http://127.0.0.1:${port}/clients/list`, {
        Host: `demo.localhost:${port}`, Authorization: basic(demo.clients.owner.client_id, demo.clients.owner.client_secret),
      });
      expect(demoList.body).toMatchObject({ stat: 'ok' });
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('CONSOLE_PORT serves the operators\' console: it says how to make the first operator, then sends the browser to the operators\' sign-in', async () => {
    const [port, consolePort] = [await freePort(), await freePort()];
    const server = startNode(SERVER, { cwd: dir, env: { PORT: String(port), CONSOLE_PORT: String(consolePort) } });
    try {
      await server.waitFor(/console listening/);
      const consoleBase = `http://127.0.0.1:${consolePort}`;
      expect((await get(`${consoleBase}/healthz`)).body).toEqual({ stat: 'ok' });
      const before = await fetch(`${consoleBase}/`, { redirect: 'manual' });
      expect(before.status).toBe(503);
      expect(await before.text()).toContain('npx gatehouse operators:add you@example.com --role admin');
      const added = cli(['operators:add', 'ops@example.com', '--role', 'admin'], { cwd: dir, env: {} });
      expect(added.stdout).toContain('created the operators\' application "operators"');
      expect(added.stdout).toContain('created the operator ops@example.com (admin) and mailed it a link to choose its password');
      // the command says what it did to an operator it made, never leaving the console without an admin;
      // an account it did not make is refused, naming --reset
      const last = cli(['operators:role', 'ops@example.com', 'viewer'], { cwd: dir, env: {} });
      expect([last.status, last.stderr]).toEqual([1, expect.stringContaining('this is the last admin who can sign in')]);
      expect(cli(['operators:add', 'second@example.com', '--role', 'admin'], { cwd: dir, env: {} }).status).toBe(0);
      expect(cli(['operators:role', 'ops@example.com', 'viewer'], { cwd: dir, env: {} }).stdout).toContain('admin before, viewer now');
      const made = cli(['users:create', 'someone@example.com', '--app', 'operators'], { cwd: dir, env: {} });
      expect(made.status).toBe(0);
      const refused = cli(['operators:add', 'someone@example.com', '--role', 'admin'], { cwd: dir, env: {} });
      expect([refused.status, refused.stderr]).toEqual([1, expect.stringContaining('--reset')]);
      // a command beside the running server knows where it answers (its port is not 3000)
      const listed = JSON.parse(cli(['apps:list'], { cwd: dir, env: {} }).stdout) as { name: string; base_url: string | null }[];
      expect(listed.find((a) => a.name === 'operators')?.base_url).toBe(`http://operators.localhost:${port}`);
      const signIn = await fetch(`${consoleBase}/`, { redirect: 'manual' });
      expect([signIn.status, signIn.headers.get('location')]).toEqual([303, '/signin?locale=en-US&next=%2F']);
      const hosted = await fetch(`${consoleBase}/signin`, { redirect: 'manual' });
      const to = new URL(hosted.headers.get('location')!);
      expect(`${to.origin}${to.pathname}`).toBe(`http://operators.localhost:${port}/signin`);
      expect(to.searchParams.get('redirect_uri')).toBe(`http://localhost:${consolePort}/callback`);
      // the operators' hosted sign-in takes the console's callback (no redirect_uris setting needed)
      const undo = resolveLocalhostNames();
      try {
        const page = await fetch(to);
        expect(page.status).toBe(200);
        expect(await page.text()).toContain('id="f-signInEmailAddress"');
      } finally {
        undo();
      }
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('apps:list and apps:show with no server running and no PUBLIC_BASE_URL say they do not know the address, instead of guessing one', () => {
    const listed = cli(['apps:list'], { cwd: dir, env: {} });
    expect(JSON.parse(listed.stdout).every((a: { base_url: unknown }) => a.base_url === null)).toBe(true);
    expect(listed.stderr).toContain('PUBLIC_BASE_URL');
    expect(JSON.parse(cli(['apps:list'], { cwd: dir, env: { PUBLIC_BASE_URL: 'https://id.example.com' } }).stdout)[0].base_url).toMatch(/^https:\/\/([a-z0-9-]+\.)?id\.example\.com$/);
    const shown = cli(['apps:show', 'local'], { cwd: dir, env: {} });
    expect([JSON.parse(shown.stdout).base_url, shown.stderr]).toEqual([null, expect.stringContaining('PUBLIC_BASE_URL')]);
  });

  it('npm start hands SIGTERM to the server, which stops gracefully (no orphaned node process)', async () => {
    const port = await freePort();
    const npm = spawn('npm', ['start'], {
      cwd: ROOT, env: { ...childEnv({ PORT: String(port), DATABASE_URL: `sqlite:${path.join(dir, 'npm-start.sqlite')}`, SECRET_KEY: 'e'.repeat(64), MAIL_TRANSPORT: 'file', LOG_LEVEL: 'info' }) },
    });
    let out = '';
    npm.stdout.on('data', (d) => (out += d));
    npm.stderr.on('data', (d) => (out += d));
    for (let i = 0; i < 300 && !out.includes('api listening'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(out).toContain('api listening');
    npm.kill('SIGTERM');
    for (let i = 0; i < 200 && !out.includes('"msg":"stopped"'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(out).toContain('"msg":"stopped"');
    // nothing listens any more
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });

  it('from SIGTERM on, /readyz answers 503 "stopping" while the requests in flight finish', async () => {
    const port = await freePort();
    const server = startNode(SERVER, { cwd: dir, env: { PORT: String(port), LOG_LEVEL: 'info' } });
    try {
      await server.waitFor(/gatehouse api listening/);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      server.child.kill('SIGTERM');
      await server.waitFor(/shutting down/);
      // the listener still accepts for a moment: a load balancer asking now learns to send nothing more
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ stat: 'error', checks: { process: expect.stringContaining('is stopping') } });
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('LOG_FORMAT=pretty prints readable lines instead of JSON', async () => {
    const port = await freePort();
    const server = startNode(SERVER, { cwd: dir, env: { PORT: String(port), LOG_FORMAT: 'pretty' } });
    try {
      await server.waitFor(/INFO.*gatehouse api listening/);
      expect(server.output()).not.toMatch(/^\{"level"/m);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('refuses bad configuration with one clear line per bad value', () => {
    const r = cli(['migrate'], { cwd: dir, env: { PORT: 'eighty', SECRET_KEY: 'short', REDIS_URL: 'localhost:6379' } });
    expect(r.status).toBe(78);
    expect(r.stderr).toMatch(/PORT must be a whole number/);
    expect(r.stderr).toMatch(/SECRET_KEY must be 32 random bytes/);
    expect(r.stderr).toMatch(/REDIS_URL must look like redis:\/\//);
  });

  it('with MySQL, a process that sends email refuses to start without SMTP_URL or MAIL_TRANSPORT=file', async () => {
    const mysqlEnv = { DATABASE_URL: 'mysql://root@127.0.0.1:1/nothing', SECRET_KEY: 'a'.repeat(64), PORT: String(await freePort()) };
    const worker = startNode(WORKER, { cwd: dir, env: { ...mysqlEnv, REDIS_URL: 'redis://127.0.0.1:1' } });
    expect(await worker.exited).toBe(78);
    expect(worker.output()).toContain('SMTP_URL is required with a MySQL DATABASE_URL');
    const api = startNode(SERVER, { cwd: dir, env: mysqlEnv }); // no Redis: it would send email itself
    expect(await api.exited).toBe(78);
    expect(api.output()).toContain('or set MAIL_TRANSPORT=file');
  });

  it('mail:last shows the newest email written as a file, and its link', async () => {
    const port = await freePort();
    const server = startNode(SERVER, { cwd: dir, env: { PORT: String(port) } });
    try {
      await server.waitFor(/gatehouse api listening/);
      const clients = JSON.parse(cli(['clients:list', '--app', 'local'], { cwd: dir, env: {} }).stdout) as { client_id: string; features: string[] }[];
      const login = clients.find((c) => c.features.includes('login_client'))!.client_id;
      const registered = await post(`http://127.0.0.1:${port}/oauth/register_native_traditional`, {
        client_id: login, locale: 'en-US', emailAddress: 'newest@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
        firstName: 'Ada', lastName: 'Lovelace', displayName: 'Ada',
      });
      expect(registered.body.stat).toBe('ok');
      let shown = cli(['mail:last', '--to', 'NEWEST@example.com'], { cwd: dir, env: {} });
      for (let i = 0; i < 100 && shown.status !== 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        shown = cli(['mail:last', '--to', 'NEWEST@example.com'], { cwd: dir, env: {} });
      }
      expect(shown.stdout).toMatch(/To: +newest@example.com/);
      expect(shown.stdout).toMatch(/Subject: +Welcome/);
      const link = cli(['mail:last', '--link'], { cwd: dir, env: {} }).stdout.trim();
      expect(link).toMatch(/^http:\/\/localhost:\d+\/verify-email\?verification_code=\w+$/);
      // the log names the file and how to read it, never the link
      await server.waitFor(/email written as a file.*npx gatehouse mail:last/);
      expect(server.output()).not.toContain(new URL(link).searchParams.get('verification_code')!);
      expect(cli(['mail:last', '--to', 'nobody@example.com'], { cwd: dir, env: {} }).status).toBe(1);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
