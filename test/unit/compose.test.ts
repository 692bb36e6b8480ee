import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config';
import { projectRoot } from '../../src/runtime';

// No Docker engine runs in CI: this keeps docker-compose.yml consistent with the code instead.
const root = projectRoot();
// merge keys (<<) as Docker Compose reads them
const compose = parse(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true });
const services = compose.services as Record<string, any>;

describe('docker-compose.yml', () => {
  it('has MySQL 8, Redis 7, Mailpit, a migration step, two api replicas and a worker', () => {
    expect(services.mysql.image).toMatch(/^mysql:8/);
    expect(services.redis.image).toMatch(/^redis:7/);
    expect(services.mailpit.image).toMatch(/mailpit/);
    expect(services.api.deploy.replicas).toBe(2);
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['migrate', 'api', 'worker', 'dashboard']));
  });

  it('from empty volumes: migrate, then init (DEFAULT_APP), then the api behind one proxy port', () => {
    expect(services.init.command).toEqual(['node', 'bin/gatehouse.js', 'init']);
    expect(services.init.depends_on.migrate.condition).toBe('service_completed_successfully');
    expect(services.api.depends_on.init.condition).toBe('service_completed_successfully');
    expect(services.api.ports).toBeUndefined(); // only the proxy publishes a port
    expect(services.proxy.ports).toEqual(['3000:80']);
    expect(services.api.environment.TRUST_PROXY).toBe('1');
    const nginx = compose.configs.nginx.content as string;
    expect(nginx).toContain('proxy_pass $$api');
    expect(nginx).toContain('set $$api http://api:3000');
    expect(nginx).toMatch(/client_max_body_size 8m/); // entity.bulkCreate's limit
  });

  it('pins every image, and builds one image for every Gatehouse service', () => {
    for (const [name, service] of Object.entries(services)) {
      expect([name, service.image]).not.toEqual([name, expect.stringMatching(/:latest$|^[^:]+$/)]);
      if (service.build) expect([name, service.image]).toEqual([name, 'gatehouse:local']);
      else expect([name, service.image]).toEqual([name, expect.stringMatching(/:v?\d+\.\d+\.\d+/)]);
    }
    expect(Object.entries(services).filter(([, v]) => v.build).map(([k]) => k).sort()).toEqual(['api', 'dashboard', 'init', 'migrate', 'worker']);
  });

  it('gives every long-running service a health check', () => {
    for (const name of ['mysql', 'redis', 'mailpit', 'api', 'proxy', 'worker', 'dashboard']) expect(services[name].healthcheck?.test).toBeDefined();
  });

  it('runs commands that the build produces', () => {
    for (const name of ['migrate', 'init', 'api', 'worker', 'dashboard']) {
      const file = services[name].command[1] as string;
      expect(fs.existsSync(path.join(root, file))).toBe(true);
    }
  });

  it('keeps secrets out of the file and out of containers\' environments: Compose secrets, read as files', () => {
    const text = fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
    expect(text).not.toMatch(/PASSWORD:\s*\S|SECRET_KEY:\s*\S|:\/\/[^/@\s]+:[^/@\s]+@/); // no literal password, key or URL password
    expect(Object.keys(compose.secrets).sort()).toEqual(['dashboard_password', 'db_password', 'db_root_password', 'secret_key']);
    for (const [name, service] of Object.entries(services)) {
      const env = (service.environment ?? {}) as Record<string, string>;
      for (const [key, file] of Object.entries(env).filter(([k]) => k.endsWith('_FILE'))) {
        // every file a service reads is a secret mounted on it
        expect([name, key, service.secrets]).toEqual([name, key, expect.arrayContaining([path.basename(file)])]);
      }
    }
    // only the proxy is reachable from other machines; Mailpit's UI and the dashboard stay on this one
    expect(services.mailpit.ports).toEqual([expect.stringMatching(/^127\.0\.0\.1:/)]);
    expect(services.dashboard.ports).toEqual([expect.stringMatching(/^127\.0\.0\.1:/)]);
  });

  it('passes an environment the configuration accepts, the same to api, worker and migrate', () => {
    const env = services.api.environment as Record<string, string>;
    expect(services.worker.environment).toEqual(env);
    expect(services.migrate.environment).toEqual(env);
    expect(services.init.environment).toEqual(env);
    // the secrets as Compose mounts them: files
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-secrets-'));
    const secret = (name: string, value: string) => (fs.writeFileSync(path.join(dir, name), `${value}\n`), path.join(dir, name));
    const files = { SECRET_KEY_FILE: secret('secret_key', 'ab'.repeat(32)), DATABASE_PASSWORD_FILE: secret('db_password', 'p@ss word'), DASHBOARD_PASSWORD_FILE: secret('dashboard_password', 'cd'.repeat(8)) };
    const resolved = { ...env, SECRET_KEY_FILE: files.SECRET_KEY_FILE, DATABASE_PASSWORD_FILE: files.DATABASE_PASSWORD_FILE };
    const config = loadConfig(resolved, root);
    expect(config).toMatchObject({ embedded: false, host: '0.0.0.0', database: { dialect: 'mysql', url: 'mysql://gatehouse:p%40ss%20word@mysql:3306/gatehouse' } });
    expect(config.secretKey.toString('hex')).toBe('ab'.repeat(32));
    expect(config.redisUrl).toBe('redis://redis:6379');
    expect(config.smtpUrl).toBe('smtp://mailpit:1025');
    expect(config.metricsPort).toBe(9464);
    // the dashboard: the same environment plus its port and operator credential
    const dashboard = loadConfig({ ...services.dashboard.environment, ...files }, root);
    expect(dashboard.dashboard.password).toBe('cd'.repeat(8));
    expect(dashboard.dashboard).toMatchObject({ port: 3100, user: 'operator' });
    expect(dashboard.redisUrl).toBe('redis://redis:6379');
    expect(services.worker.healthcheck.test.join(' ')).toContain(':9464/readyz');
  });
});
