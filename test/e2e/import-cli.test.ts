import fs from 'node:fs';
import path from 'node:path';
import { openDatabase, type Database } from '../../src/db';
import { createTestBackend, type TestBackend } from '../helpers/backend';
import { cli, CLI, startNode } from '../helpers/processes';
import { stored } from '../helpers/stored';
import { bcryptOf } from '../helpers/foreign-hashes';

// docs/import.md: `gatehouse users:import FILE.jsonl` streams a file in batches; a malformed line is
// refused with its number and the rest imported; killed (SIGKILL) midway and started again, it goes
// on after the last batch committed and creates each record once; each batch is one audit entry,
// one with a taken address too. On the configured database.

describe('gatehouse users:import', () => {
  let backend: TestBackend;
  let db: Database;
  const LINES = 6000;
  const BROKEN = new Map([[17, 'not JSON'], [2500, 'attributes.email'], [5999, 'attributes.password']]);

  beforeAll(async () => {
    backend = await createTestBackend();
    expect(cli(['migrate'], { cwd: backend.dir, env: backend.env }).status).toBe(0);
    expect(cli(['init'], { cwd: backend.dir, env: backend.env }).status).toBe(0);
    db = openDatabase(backend.config.database);
  });
  afterAll(async () => {
    await db.close();
    await backend.cleanup();
  });

  it('refuses malformed lines by number, imports the rest once even when killed midway, and answers the imported password', async () => {
    const bcrypt = bcryptOf('correct horse battery');
    const file = path.join(backend.dir, 'users.jsonl');
    const lines: string[] = [];
    for (let n = 1; n <= LINES; n++) {
      if (n === 17) lines.push('{"email": "broken@');
      else if (n === 2500) lines.push(JSON.stringify({ email: 'not an address' }));
      else if (n === 5999) lines.push(JSON.stringify({ email: 'x5999@example.com', password: { hashed: 'md5:0123' } }));
      else lines.push(JSON.stringify({ email: `user${n}@example.com`, givenName: `User ${n}`, ...(n % 1000 === 1 && { password: bcrypt.object }) }));
    }
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    const count = () => stored(db).count('entities');

    // killed once the first batches committed
    const first = startNode(CLI, { cwd: backend.dir, env: backend.env, args: ['users:import', file, '--batch', '500'] });
    const end = Date.now() + 60_000;
    while ((await count()) < 1000 && first.child.exitCode === null && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    first.child.kill('SIGKILL');
    await first.exited;
    const whenKilled = await count();
    expect(whenKilled).toBeGreaterThan(0);
    expect(whenKilled).toBeLessThan(LINES - BROKEN.size);
    // each batch with its progress: what was created is whole batches
    expect(whenKilled % 500 === 0 || whenKilled % 500 === 499).toBe(true);

    const second = cli(['users:import', file, '--batch', '500'], { cwd: backend.dir, env: backend.env });
    expect(second.stderr).toMatch(/^resuming after line \d+ \(\d+ records created before\)$/m);
    expect(second.status).toBe(2);
    expect(await count()).toBe(LINES - BROKEN.size);
    expect(await stored(db).rows('SELECT email FROM entities GROUP BY email HAVING COUNT(*) > 1')).toEqual([]);
    // the refusals the second run saw, by line (the first run's, before its kill, were printed by it)
    for (const [line, what] of BROKEN) if (line > Number(/resuming after line (\d+)/.exec(second.stderr)![1])) expect(second.stderr).toContain(`line ${line}: ${what}`);

    // the file done: a third run does nothing
    const third = cli(['users:import', file], { cwd: backend.dir, env: backend.env });
    expect(third.stdout).toContain('imported 0 users from 0 lines');
    expect(await count()).toBe(LINES - BROKEN.size);

    // the imported hash is kept as it was, and the record shows as any other
    const shown = cli(['users:show', 'user1001@example.com'], { cwd: backend.dir, env: backend.env });
    expect(JSON.parse(shown.stdout)).toMatchObject({ email: 'user1001@example.com', givenName: 'User 1001', password_format: 'bcrypt' });
    expect(shown.stdout).not.toContain(String(bcrypt.object.hashed));
    const [row] = await stored(db).rows<{ password_hash: string }>('SELECT password_hash FROM entities WHERE email = ?', ['user1001@example.com']);
    expect(row.password_hash).toBe(bcrypt.object.hashed);
    // how many are still on an imported hash, by format
    expect(JSON.parse(cli(['users:password-formats'], { cwd: backend.dir, env: backend.env }).stdout)).toMatchObject({ formats: { bcrypt: 6 }, still_imported: 6 });
    // each batch is one audit entry, not two per record: 5,997 lines read, 500 to a batch, however the runs split them
    const entries = await stored(db).rows<{ type: string; data: string }>('SELECT event_type AS type, data FROM audit_log');
    expect(entries.filter((e) => e.type === 'record.created' || e.type === 'account.registered')).toEqual([]);
    const imported = entries.filter((e) => e.type === 'records.imported').map((e) => JSON.parse(e.data) as { created: number });
    expect({ entries: imported.length, created: imported.reduce((sum, e) => sum + e.created, 0) }).toEqual({ entries: 12, created: LINES - BROKEN.size });
  }, 180_000);

  it('a batch with taken addresses is one transaction and one audit entry, counting the lines it refused', async () => {
    const write = (name: string, records: object[]) => {
      const file = path.join(backend.dir, name);
      fs.writeFileSync(file, `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
      return file;
    };
    expect(cli(['users:import', write('first.jsonl', [{ email: 'taken-a@example.com' }, { email: 'taken-b@example.com' }])], { cwd: backend.dir, env: backend.env }).status).toBe(0);
    const [{ last }] = await stored(db).rows<{ last: number }>('SELECT MAX(id) AS last FROM audit_log');

    const file = write('second.jsonl', [
      { email: 'fresh-1@example.com' },
      { email: 'taken-a@example.com' },
      { email: 'fresh-2@example.com', password: bcryptOf('correct horse battery').object },
      { email: 'fresh-1@example.com' }, // taken by line 1 of the same batch
      { email: 'fresh-3@example.com', password: 'Zq7#Lp' }, // shorter than the application's minimum
      { email: 'taken-b@example.com' },
      { email: 'fresh-4@example.com' },
    ]);
    const run = cli(['users:import', file, '--batch', '4'], { cwd: backend.dir, env: backend.env });
    expect(run.status).toBe(2);
    expect(run.stdout).toContain('imported 3 users from 7 lines; 4 lines refused');
    for (const line of [2, 4, 6]) expect(run.stderr).toContain(`line ${line}: another record already has this email`);
    expect(run.stderr).toMatch(/^line 5: password /m);

    const entries = await stored(db).rows<{ type: string; data: string }>('SELECT event_type AS type, data FROM audit_log WHERE id > ? ORDER BY id', [last]);
    expect(entries.map((e) => ({ type: e.type, data: JSON.parse(e.data) as unknown }))).toEqual([
      { type: 'records.imported', data: { created: 2, refused: 2, weak: 0, formats: { none: 1, bcrypt: 1 } } },
      { type: 'records.imported', data: { created: 1, refused: 2, weak: 0, formats: { none: 1 } } },
    ]);
    const emails = await stored(db).rows<{ email: string }>("SELECT email FROM entities WHERE email LIKE 'fresh-%' ORDER BY email");
    expect(emails.map((e) => e.email)).toEqual(['fresh-1@example.com', 'fresh-2@example.com', 'fresh-4@example.com']);
  }, 60_000);
});
