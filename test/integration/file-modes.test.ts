import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { createSequelize } from '../../src/db/database';
import { createLogger } from '../../src/logger';
import { createFileTransport } from '../../src/jobs/mail-transport';

const mode = (file: string) => fs.statSync(file).mode & 0o777;

describe('the embedded default\'s files', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-modes-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('the data folder, the SQLite file, the secret key and the emails are readable by their owner only', async () => {
    const varDir = path.join(dir, 'var');
    const config = loadConfig({ DATA_DIR: varDir }, dir);
    expect(config.database.dialect).toBe('sqlite');
    const sequelize = createSequelize(config.database);
    await sequelize.query('CREATE TABLE t (x INTEGER)');
    await sequelize.close();
    expect(mode(varDir)).toBe(0o700);
    expect(mode(path.join(varDir, 'secret.key'))).toBe(0o600);
    expect(mode(path.join(varDir, 'gatehouse.sqlite'))).toBe(0o600);

    const transport = createFileTransport(config.mailDir, createLogger('silent'));
    const { file } = await transport.send('modes-test', { from: 'a@example.test', to: 'b@example.test', subject: 'x', text: 'https://reset.example/?code=secret' });
    transport.close();
    expect(mode(config.mailDir)).toBe(0o700);
    expect(mode(file!)).toBe(0o600);
  });

  it('a database file or key left readable by others is tightened at start', async () => {
    const varDir = path.join(dir, 'loose');
    fs.mkdirSync(varDir, { mode: 0o755 });
    fs.writeFileSync(path.join(varDir, 'secret.key'), `${'ab'.repeat(32)}\n`, { mode: 0o644 });
    fs.writeFileSync(path.join(varDir, 'gatehouse.sqlite'), '', { mode: 0o644 });
    fs.chmodSync(path.join(varDir, 'secret.key'), 0o644);
    fs.chmodSync(path.join(varDir, 'gatehouse.sqlite'), 0o644);
    const config = loadConfig({ DATA_DIR: varDir }, dir);
    const sequelize = createSequelize(config.database);
    await sequelize.close();
    expect(mode(path.join(varDir, 'secret.key'))).toBe(0o600);
    expect(mode(path.join(varDir, 'gatehouse.sqlite'))).toBe(0o600);
  });
});
