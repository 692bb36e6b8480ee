import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { projectRoot } from '../../src/paths';
import { parseRedisUrl, queuePrefix } from '../../src/queue/redis';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-config-'));

function problems(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env, tmp());
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('configuration', () => {
  it('defaults to the embedded setup and generates a secret key into var/ once', () => {
    const dir = tmp();
    const config = loadConfig({}, dir);
    expect(config).toMatchObject({
      database: { dialect: 'sqlite', storage: path.join(dir, 'var/gatehouse.sqlite') },
      port: 3000, host: '127.0.0.1', defaultApp: 'local', embedded: true, publicBaseUrl: 'http://localhost:3000',
      mailDir: path.join(dir, 'var/mail'), redisPrefix: 'gatehouse',
    });
    expect(config.redisUrl).toBeUndefined();
    expect(config.secretKey).toHaveLength(32);
    expect(loadConfig({}, dir).secretKey.equals(config.secretKey)).toBe(true);
  });

  it('keeps its data in var/ of the project, whatever the current directory, or in DATA_DIR', () => {
    const elsewhere = tmp();
    const before = process.cwd();
    process.chdir(elsewhere);
    try {
      const config = loadConfig({ SECRET_KEY: 'ab'.repeat(32) });
      expect(config.varDir).toBe(path.join(projectRoot(), 'var'));
      expect(config.database).toEqual({ dialect: 'sqlite', storage: path.join(projectRoot(), 'var/gatehouse.sqlite') });
    } finally {
      process.chdir(before);
    }
    const data = path.join(tmp(), 'data');
    const config = loadConfig({ DATA_DIR: data }, tmp());
    expect(config).toMatchObject({ varDir: data, mailDir: path.join(data, 'mail'), database: { storage: path.join(data, 'gatehouse.sqlite') } });
    expect(fs.existsSync(path.join(data, 'secret.key'))).toBe(true);
  });

  it('reads production settings', () => {
    const config = loadConfig({
      DATABASE_URL: 'mariadb://gh:pw@db:3306/gatehouse', REDIS_URL: 'redis://redis:6379', SMTP_URL: 'smtp://mailpit:1025',
      SECRET_KEY: 'ab'.repeat(32), PORT: '8080', DEFAULT_APP: 'acme', PUBLIC_BASE_URL: 'https://login.acme.test/', HOST: '0.0.0.0',
    }, tmp());
    expect(config).toMatchObject({
      database: { dialect: 'mysql', url: 'mysql://gh:pw@db:3306/gatehouse' }, redisUrl: 'redis://redis:6379',
      smtpUrl: 'smtp://mailpit:1025', port: 8080, defaultApp: 'acme', publicBaseUrl: 'https://login.acme.test', embedded: false,
      credentialsRetentionMinutes: 1440,
    });
    expect(loadConfig({ CREDENTIALS_RETENTION_MINUTES: '15' }, tmp()).credentialsRetentionMinutes).toBe(15);
  });

  it('runs sign-in and rotation by stored procedures unless DATABASE_PROCEDURES=off', () => {
    const env = { DATABASE_URL: 'mysql://gh:pw@db:3306/gatehouse', SECRET_KEY: 'ab'.repeat(32), MAIL_TRANSPORT: 'file' };
    expect(loadConfig(env, tmp()).database).toMatchObject({ procedures: true });
    expect(loadConfig({ ...env, DATABASE_PROCEDURES: 'off' }, tmp()).database).toMatchObject({ procedures: false });
    expect(problems({ ...env, DATABASE_PROCEDURES: 'no' })).toEqual([
      'DATABASE_PROCEDURES must be on (sign-in and token rotation by stored procedures, one round trip each) or off (plain statements, for engines without stored procedures) (got "no")',
    ]);
  });

  it('reads replicas for the lag-tolerant reads from DATABASE_READ_URL, only beside a MySQL primary', () => {
    const env = { DATABASE_URL: 'mysql://gh@db:3306/gatehouse', SECRET_KEY: 'ab'.repeat(32), MAIL_TRANSPORT: 'file' };
    expect(loadConfig(env, tmp()).database).toMatchObject({ readUrls: [] });
    const two = loadConfig({ ...env, DATABASE_READ_URL: 'mysql://gh@replica1:3306/gatehouse, mariadb://reader:own@replica2/gatehouse', DATABASE_PASSWORD: 'pw' }, tmp());
    // the primary's password goes to a replica URL written without one (a replica copies the primary's users)
    expect(two.database).toMatchObject({ url: 'mysql://gh:pw@db:3306/gatehouse', readUrls: ['mysql://gh:pw@replica1:3306/gatehouse', 'mysql://reader:own@replica2/gatehouse'] });
    expect(problems({ DATABASE_READ_URL: 'mysql://gh@replica1:3306/gatehouse' })).toEqual([
      'DATABASE_READ_URL names replicas of a MySQL or MariaDB primary: set DATABASE_URL to the primary, or unset DATABASE_READ_URL',
    ]);
    expect(problems({ ...env, DATABASE_READ_URL: 'mysql://gh:s3cret@replica1:3306/gatehouse,postgres://gh:0ther@replica2/gh' })).toEqual([
      'DATABASE_READ_URL must be one or more replicas of DATABASE_URL, each like mysql://USER:PASSWORD@HOST:3306/DATABASE, separated by commas'
        + ' (got "mysql://gh:***@replica1:3306/gatehouse,postgres://gh:***@replica2/gh")',
    ]);
  });

  it('reports one line per bad value, naming the variable and what it got', () => {
    const lines = problems({ PORT: '70000', DEFAULT_APP: 'Bad_App', PUBLIC_BASE_URL: 'login.example.com', DATABASE_URL: 'postgres://x/y', LOG_LEVEL: 'loud', LOG_FORMAT: 'xml', VERSIONS_RETENTION_DAYS: '0', CREDENTIALS_RETENTION_MINUTES: '43201' });
    expect(lines).toHaveLength(8);
    expect(lines).toEqual(expect.arrayContaining([
      expect.stringMatching(/^PORT must be a whole number between 1 and 65535 \(got "70000"\)$/),
      expect.stringMatching(/^DEFAULT_APP must be a DNS label/),
      expect.stringMatching(/^PUBLIC_BASE_URL must/),
      expect.stringMatching(/^DATABASE_URL must look like mysql:/),
      expect.stringMatching(/^LOG_LEVEL must be one of/),
      expect.stringMatching(/^LOG_FORMAT must be json/),
      expect.stringMatching(/^VERSIONS_RETENTION_DAYS must be a whole number of days/),
      expect.stringMatching(/^CREDENTIALS_RETENTION_MINUTES must be a whole number of minutes from 1 to 43200/),
    ]));
  });

  it('requires SECRET_KEY with MySQL, and checks its shape', () => {
    expect(problems({ DATABASE_URL: 'mysql://root@127.0.0.1:3306/gh' })).toEqual([expect.stringMatching(/^SECRET_KEY is required/)]);
    expect(problems({ SECRET_KEY: 'too-short' })).toEqual([expect.stringMatching(/^SECRET_KEY must be 32 random bytes/)]);
    expect(problems({ SECRET_KEY: Buffer.alloc(32, 7).toString('base64') })).toEqual([]);
  });

  it('reads NAME_FILE (Docker and Compose secrets) and DATABASE_PASSWORD into the URL, saying what is wrong without the values', () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, 'key'), `${'ef'.repeat(32)}\n`);
    fs.writeFileSync(path.join(dir, 'pw'), 'pa:ss/w@rd\n');
    const config = loadConfig({ DATABASE_URL: 'mysql://gh@db:3306/gatehouse', DATABASE_PASSWORD_FILE: path.join(dir, 'pw'), SECRET_KEY_FILE: path.join(dir, 'key'), MAIL_TRANSPORT: 'file' }, dir);
    expect(config.secretKey.toString('hex')).toBe('ef'.repeat(32));
    expect(config.database).toEqual({ dialect: 'mysql', url: 'mysql://gh:pa%3Ass%2Fw%40rd@db:3306/gatehouse', procedures: true, readUrls: [] });
    expect(problems({ SECRET_KEY: 'ab'.repeat(32), SECRET_KEY_FILE: path.join(dir, 'key') })).toEqual(['set SECRET_KEY or SECRET_KEY_FILE, not both']);
    expect(problems({ SECRET_KEY_FILE: path.join(dir, 'missing') })).toEqual([expect.stringMatching(/^SECRET_KEY_FILE names ".*missing", which cannot be read \(ENOENT\)$/)]);
    const twice = problems({ DATABASE_URL: 'mysql://gh:one@db:3306/gatehouse', DATABASE_PASSWORD: 'two', SECRET_KEY: 'ab'.repeat(32), MAIL_TRANSPORT: 'file' });
    expect(twice).toEqual(['DATABASE_URL has a password and DATABASE_PASSWORD is set: give the password once']);
  });

  it('never echoes a secret it refuses, nor the password of a URL', () => {
    const found = problems({
      DATABASE_URL: 'postgres://gatehouse:s3cret-pw@db.internal/gatehouse', REDIS_URL: 'http://default:r3dis-pw@cache:6379',
      SMTP_URL: 'ftp://mailer:sm7p-pw@smtp.example.com', SECRET_KEY: 'abc-secret', DASHBOARD_PASSWORD: 'short-pw',
    });
    expect(found).toHaveLength(5);
    const text = found.join('\n');
    for (const secret of ['s3cret-pw', 'r3dis-pw', 'sm7p-pw', 'abc-secret', 'short-pw']) expect(text).not.toContain(secret);
    expect(text).toContain('(got "postgres://gatehouse:***@db.internal/gatehouse")');
    expect(text).toContain('SECRET_KEY must be 32 random bytes as 64 hex characters or base64 (generate one with: openssl rand -hex 32) (got a value of 10 characters, not shown)');
  });
});

describe('REDIS_URL', () => {
  it('names one server, or a Redis Cluster by some of its nodes', () => {
    expect(parseRedisUrl('redis://cache:6379')).toEqual({ cluster: false, url: 'redis://cache:6379' });
    expect(parseRedisUrl('redis+cluster://r1:7000,r2:7001,[::1]:7002')).toEqual({
      cluster: true, tls: false, username: undefined, password: undefined,
      nodes: [{ host: 'r1', port: 7000 }, { host: 'r2', port: 7001 }, { host: '::1', port: 7002 }],
    });
    expect(parseRedisUrl('rediss+cluster://default:p%40ss@r1:7000')).toMatchObject({ cluster: true, tls: true, username: 'default', password: 'p@ss' });
    expect(loadConfig({ SECRET_KEY: 'ab'.repeat(32), REDIS_URL: 'redis+cluster://r1:7000,r2:7001' }, tmp()).redisUrl).toBe('redis+cluster://r1:7000,r2:7001');
  });

  it('names a master behind Sentinels by some of the Sentinels and the master\'s name', () => {
    expect(parseRedisUrl('redis+sentinel://s1:26379,s2,[::1]:26380/gatehouse')).toEqual({
      cluster: false, name: 'gatehouse', tls: false, username: undefined, password: undefined,
      sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26379 }, { host: '::1', port: 26380 }],
    });
    expect(parseRedisUrl('rediss+sentinel://default:p%40ss@s1/main')).toMatchObject({ tls: true, username: 'default', password: 'p@ss', name: 'main' });
    // the master's name is required: a Sentinel watches several masters
    expect(problems({ SECRET_KEY: 'ab'.repeat(32), REDIS_URL: 'redis+sentinel://u:s3cret@s1:26379' })).toEqual([
      'REDIS_URL must look like redis://HOST:6379, rediss://…, redis+cluster://HOST:7000,HOST:7001 or redis+sentinel://HOST:26379,HOST:26380/MASTER_NAME (got "redis+sentinel://u:***@s1:26379")',
    ]);
    expect(() => parseRedisUrl('redis+sentinel://s1:port/main')).toThrow('REDIS_URL names a Sentinel "s1:port" that is not HOST:PORT');
    // an @ of the password left unencoded is not read as part of a host
    expect(() => parseRedisUrl('redis+sentinel://u:p@ss@s1/main')).toThrow('REDIS_URL must look like');
    // and the refusal shows none of that password
    expect(problems({ SECRET_KEY: 'ab'.repeat(32), REDIS_URL: 'redis+sentinel://u:p@ss@s1/main' })).toEqual([
      expect.stringContaining('(got "redis+sentinel://u:***@s1/main")'),
    ]);
    expect(() => parseRedisUrl('redis+cluster://u:p@ss@h1:7000')).toThrow('REDIS_URL must look like');
  });

  it('refuses a cluster node that is not HOST:PORT, and any other scheme, without echoing a password', () => {
    expect(problems({ REDIS_URL: 'redis+cluster://default:s3cret@r1:7000,r2:port' })).toEqual([
      expect.stringMatching(/^REDIS_URL names a cluster node "r2:port" that is not HOST:PORT/),
    ]);
    expect(problems({ REDIS_URL: 'redis+cluster://default:s3cret@r1:7000,r2:port' }).join('')).not.toContain('s3cret');
    expect(problems({ REDIS_URL: 'memcached://cache:11211' })).toEqual([expect.stringMatching(/^REDIS_URL must look like redis:\/\/HOST:6379/)]);
  });

  it('gives each queue a hash tag of its own on a cluster, and keeps the plain prefix on one server', () => {
    expect(queuePrefix('gatehouse', 'mail', true)).toBe('gatehouse:{mail}');
    expect(queuePrefix('gatehouse', 'mail', false)).toBe('gatehouse');
  });
});

describe('argon2 parameters', () => {
  it('default to OWASP and can be raised', () => {
    expect(loadConfig({ SECRET_KEY: 'ab'.repeat(32) }, tmp()).passwordPolicy).toEqual({ memoryCost: 19_456, timeCost: 2, parallelism: 1 });
    expect(loadConfig({ SECRET_KEY: 'ab'.repeat(32), ARGON2_MEMORY_KIB: '65536', ARGON2_ITERATIONS: '3' }, tmp()).passwordPolicy)
      .toEqual({ memoryCost: 65_536, timeCost: 3, parallelism: 1 });
    expect(problems({ ARGON2_MEMORY_KIB: '1024' })).toEqual([expect.stringMatching(/^ARGON2_MEMORY_KIB must be/)]);
  });

  it('run one hash per core at once unless ARGON2_CONCURRENCY says otherwise', () => {
    expect(loadConfig({ SECRET_KEY: 'ab'.repeat(32) }, tmp()).hashConcurrency).toBe(os.availableParallelism());
    expect(loadConfig({ SECRET_KEY: 'ab'.repeat(32), ARGON2_CONCURRENCY: '3' }, tmp()).hashConcurrency).toBe(3);
    for (const bad of ['0', '1.5', 'many', '257']) {
      expect(problems({ ARGON2_CONCURRENCY: bad })).toEqual([expect.stringMatching(/^ARGON2_CONCURRENCY must be a whole number from 1 to 256/)]);
    }
  });
});
