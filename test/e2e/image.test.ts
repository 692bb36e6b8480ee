import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { basic, onMysql, skipUnless } from '../helpers/backend';
import { freePort, ROOT, spawnStarted, type Started } from '../helpers/processes';

/**
 * The image as the Dockerfile builds it, without Docker: the files it copies (dist/, node_modules/,
 * bin/, flows/, templates/, package.json) in a folder of root's that the process cannot write, a
 * data folder of its own (`DATA_DIR`, the image's /data volume), and a non-root user (the image's
 * `node`; here `nobody`).
 */
const NOBODY = 65534;
const asNobody = ['--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups'];
const IMAGE_FILES = ['dist', 'node_modules', 'bin', 'flows', 'templates', 'package.json'];

// the image's embedded default whatever the suite's database: run with the suite on the embedded default
skipUnless(process.getuid?.() === 0 && !onMysql, 'the image test runs with the suite on the embedded default (it starts the embedded default itself), and starting the image as a non-root user needs root to switch users')('the image, as a non-root user with a read-only app folder', () => {
  let app: string;
  let data: string;
  beforeAll(() => {
    app = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-image-'));
    fs.chmodSync(app, 0o755);
    // hard links: the same files, in a folder others may enter (a CI checkout may not be)
    // (copies where the checkout is on another file system)
    const copy = (from: string, to: string) => spawnSync('cp', ['-al', from, to]).status === 0 || spawnSync('cp', ['-a', from, to]).status === 0;
    for (const f of IMAGE_FILES) expect(copy(path.join(ROOT, f), app)).toBe(true);
    expect(copy(process.execPath, path.join(app, 'node'))).toBe(true);
    data = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-image-data-'));
    fs.chownSync(data, NOBODY, NOBODY);
    fs.chmodSync(data, 0o700);
  });
  afterAll(() => {
    fs.rmSync(app, { recursive: true, force: true });
    fs.rmSync(data, { recursive: true, force: true });
  });

  it('the embedded default starts, serves and keeps its data in DATA_DIR; the app folder stays untouched', async () => {
    const port = await freePort();
    const env = { PATH: process.env.PATH, NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), DATA_DIR: data };
    const server: Started = spawnStarted('setpriv', [...asNobody, path.join(app, 'node'), 'dist/src/server.js'], { cwd: app, env });
    try {
      await server.waitFor(/gatehouse api listening/);
      const uid = fs.readFileSync(`/proc/${server.child.pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)![1];
      expect(Number(uid)).toBe(NOBODY);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);

      // the CLI, as the same user, reads the clients the first start made; the owner's secret works
      const listed = spawnSync('setpriv', [...asNobody, path.join(app, 'node'), 'bin/gatehouse.js', 'clients:list'], { cwd: app, env, encoding: 'utf8' });
      expect(listed.stderr).toBe('');
      const owner = (JSON.parse(listed.stdout) as { client_id: string; client_secret: string; features: string[] }[]).find((c) => c.features.includes('owner'))!;
      const clients = await fetch(`http://127.0.0.1:${port}/clients/list`, { headers: { authorization: basic(owner.client_id, owner.client_secret) } });
      expect(((await clients.json()) as { stat: string }).stat).toBe('ok');

      // the data is the user's, in DATA_DIR; the app folder got nothing and cannot be written
      for (const f of ['gatehouse.sqlite', 'secret.key']) expect(fs.statSync(path.join(data, f)).uid).toBe(NOBODY);
      expect(fs.existsSync(path.join(app, 'var'))).toBe(false);
      expect(spawnSync('setpriv', [...asNobody, 'touch', path.join(app, 'written')]).status).not.toBe(0);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
