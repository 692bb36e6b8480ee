import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Queue } from 'bullmq';
import mysql from 'mysql2/promise';
import { simpleParser } from 'mailparser';
import { createTestBackend, onMysql, redisUrl, type TestBackend, skipUnless } from '../helpers/backend';
import { childEnv, cli, freePort, ROOT, SERVER, startNode, WORKER } from '../helpers/processes';
import { basic, get, post } from '../helpers/http-calls';
import { pysaml2, pysaml2Idp, SAML_PEERS, spKeys, stopPysaml2 } from '../helpers/saml';
import { openDatabase } from '../../src/db';
import { createOutbox } from '../../src/queue/outbox';
import { mailRow, writeRows } from '../helpers/outbox-rows';
import { SecretBox } from '../../src/domain/secrets';
import { createLogger } from '../../src/logger';


// The gatehouse command on the configured database (docs/cli.md), as operators run it: each test runs
// many CLI processes, and a CLI process takes seconds on a loaded 2-core machine, so each test's
// time limit counts its processes (cliTime) instead of the suite's 60 seconds.

/** A test's time limit: 20 seconds for each process it runs (a CLI process on a loaded 2-core machine took up to 17), never under a minute. */
const cliTime = (processes: number) => Math.max(60_000, processes * 20_000);

describe('gatehouse CLI on the configured database', () => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await createTestBackend();
  });
  afterAll(() => backend.cleanup());

  it('migrate, apps:create --json, flows:import as new immutable versions', () => {
    const env = backend.env;
    expect(cli(['migrate'], { cwd: backend.dir, env }).stdout).toContain('0001-initial');
    expect(cli(['migrate'], { cwd: backend.dir, env }).stdout).toContain('up to date');
    const created = JSON.parse(cli(['apps:create', 'shop', '--json'], { cwd: backend.dir, env }).stdout);
    expect(created.flow).toEqual({ name: 'standard', version: 1 });
    const again = cli(['apps:create', 'shop', '--json'], { cwd: backend.dir, env });
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('already exists');
    expect(cli(['apps:create', 'Not_A_Label'], { cwd: backend.dir, env }).stderr).toContain('DNS label');

    // the same flow again: nothing new; a changed one: the next version
    const same = cli(['flows:import', path.join(ROOT, 'flows/standard'), '--app', 'shop'], { cwd: backend.dir, env });
    expect(same.status).toBe(0);
    expect(JSON.parse(same.stdout)).toEqual({ name: 'standard', version: 1, unchanged: true });
    const changed = path.join(backend.dir, 'changed-flow');
    fs.cpSync(path.join(ROOT, 'flows/standard'), changed, { recursive: true });
    const translations = JSON.parse(fs.readFileSync(path.join(changed, 'translations.json'), 'utf8'));
    translations['emailAddress.label'].values['en-US'] = 'Your email';
    fs.writeFileSync(path.join(changed, 'translations.json'), JSON.stringify(translations));
    const imported = cli(['flows:import', changed, '--app', 'shop'], { cwd: backend.dir, env });
    expect(imported.status).toBe(0);
    expect(JSON.parse(imported.stdout)).toEqual({ name: 'standard', version: 2 });
    // flows:validate checks without a database or writing; --version
    const validated = cli(['flows:validate', changed], { cwd: backend.dir, env: {} });
    expect(validated.status).toBe(0);
    expect(JSON.parse(validated.stdout)).toMatchObject({ name: 'standard', locales: expect.arrayContaining(['fr-FR']), forms: expect.arrayContaining(['signInForm']) });
    expect(cli(['--version'], { cwd: backend.dir, env: {} }).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(cli(['flows:import', path.join(ROOT, 'flows'), '--app', 'nosuch'], { cwd: backend.dir, env }).stderr).toContain('apps:create nosuch');

    // apps:list and apps:show: the applications, their users and clients, never a client's secret
    // (the address the server answers at, named here)
    const listed = JSON.parse(cli(['apps:list'], { cwd: backend.dir, env: { ...env, PUBLIC_BASE_URL: 'https://id.example.com' } }).stdout) as { name: string; users: number; clients: number }[];
    expect(listed).toContainEqual(expect.objectContaining({ name: 'shop', users: 0, clients: 2, base_url: 'https://shop.id.example.com' }));
    const shown = cli(['apps:show', 'shop'], { cwd: backend.dir, env });
    expect(JSON.parse(shown.stdout)).toMatchObject({
      name: 'shop', settings: {}, users: 0, providers: [],
      clients: expect.arrayContaining([expect.objectContaining({ features: ['owner'] }), expect.objectContaining({ features: ['login_client'] })]),
    });
    expect(shown.stdout).not.toContain(created.clients.owner.client_secret);
    expect(cli(['apps:show', 'nosuch'], { cwd: backend.dir, env }).stderr).toContain('apps:create nosuch');
  }, cliTime(12));

  it('clients:add, settings:set and settings:list make an OpenID client, each value checked as the admin API checks it', () => {
    const env = { ...backend.env, DEFAULT_APP: 'books' };
    expect(cli(['apps:create', 'books'], { cwd: backend.dir, env }).status).toBe(0);
    const added = cli(['clients:add', '--description', 'billing backend'], { cwd: backend.dir, env });
    expect(added.status).toBe(0);
    const client = JSON.parse(added.stdout) as { client_id: string; client_secret: string; features: string[]; changed: string[] };
    expect(client).toMatchObject({ client_id: expect.any(String), client_secret: expect.any(String), features: ['login_client'] });
    // it says what it changed: its pages show the application's flow; the account page keeps the application's own client
    expect(client).toMatchObject({ settings: { default_flow_name: 'standard', default_flow_version: expect.any(String) } });
    expect(client.changed.join('\n')).toMatch(/account page \(\/account\) still signs in with (?!.*\(this)/);
    expect(client.changed.join('\n')).not.toContain(client.client_id + ' unless');
    expect(cli(['clients:add', '--description', 'x', '--features', 'bogus'], { cwd: backend.dir, env }).stderr).toContain('unknown feature "bogus"');
    const set = (...args: string[]) => cli(['settings:set', ...args], { cwd: backend.dir, env });
    expect(JSON.parse(set('grant_types', 'client_credentials', '--client', client.client_id).stdout)).toMatchObject({ key: 'grant_types', value: 'client_credentials', was: null });
    expect(set('token_endpoint_auth_method', 'private_key_jwt', '--client', client.client_id).status).toBe(0);
    // a private key is refused, the value never stored
    const leaked = set('jwks', JSON.stringify({ keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'secret' }] }), '--client', client.client_id);
    expect(leaked.status).toBe(1);
    expect(leaked.stderr).toContain('private part');
    expect(set('redirect_uris', 'not a url', '--client', client.client_id).stderr).toContain('is not an absolute http(s) URL');
    expect(set('default_flow_name', 'nosuch').stderr).toContain('has no flow "nosuch"');
    expect(set('grant_types', 'client_credentials', '--client', 'nobody').stderr).toContain('has no client nobody');
    expect(set('openid_provider', 'off').status).toBe(0);
    const listed = JSON.parse(cli(['settings:list', '--client', client.client_id], { cwd: backend.dir, env }).stdout) as Record<string, string>;
    expect(listed).toMatchObject({ grant_types: 'client_credentials', token_endpoint_auth_method: 'private_key_jwt', openid_provider: 'off' });
    expect(listed).not.toHaveProperty('jwks');
    // an empty value removes the setting
    expect(JSON.parse(set('openid_provider', '').stdout)).toMatchObject({ value: null, was: 'off' });
  }, cliTime(5));

  it('webhooks:add prints the secret once, webhooks:list never; test, deliveries, rotate-secret, disable, enable, redeliver and remove, each refusal naming its option', () => {
    const env = { ...backend.env, DEFAULT_APP: 'books' };
    const run = (...args: string[]) => cli(args, { cwd: backend.dir, env });
    const added = run('webhooks:add', 'https://hooks.example.com/books', '--events', 'user.created', 'user.erased', '--description', 'billing');
    expect(added.status).toBe(0);
    const endpoint = JSON.parse(added.stdout) as { id: string; secret: string; events: string[] };
    expect(endpoint).toMatchObject({ id: expect.stringMatching(/^ep_/), secret: expect.stringMatching(/^whsec_/), events: ['user.created', 'user.erased'], description: 'billing' });
    const listed = run('webhooks:list');
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ id: endpoint.id, url: 'https://hooks.example.com/books' })]);
    expect(listed.stdout).not.toContain('whsec_');
    expect(JSON.parse(run('webhooks:test', endpoint.id).stdout)).toEqual({ message_id: expect.stringMatching(/^msg_[0-9a-f]{32}$/) });
    expect(JSON.parse(run('webhooks:deliveries', endpoint.id, '--limit', '5').stdout)).toEqual(expect.any(Array));
    const rotated = JSON.parse(run('webhooks:rotate-secret', endpoint.id).stdout) as { secret: string };
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(endpoint.secret);
    expect(JSON.parse(run('webhooks:disable', endpoint.id).stdout)).toEqual({ disabled: endpoint.id });
    expect(JSON.parse(run('webhooks:enable', endpoint.id).stdout)).toEqual({ enabled: endpoint.id });
    expect(JSON.parse(run('webhooks:redeliver', endpoint.id, '--since', '2026-01-01 00:00:00').stdout)).toEqual({ queued: 0 });
    for (const [args, says] of [
      [['webhooks:add', 'http://hooks.example.com/x', '--events', '*'], '--url must be https'],
      [['webhooks:add', 'https://127.0.0.1/x', '--events', '*'], '--url names a loopback'],
      [['webhooks:add', 'https://hooks.example.com/x', '--events', 'user.nope'], '--events unknown event type "user.nope"'],
      [['webhooks:test', 'ep_nope'], '--id is not a webhook endpoint'],
      [['webhooks:deliveries', endpoint.id, '--limit', '0'], '--limit must be a whole number'],
      [['webhooks:redeliver', endpoint.id], 'either --delivery or --since'],
      [['webhooks:redeliver', endpoint.id, '--since', 'yesterday'], '--since is not a time'],
      [['webhooks:redeliver', endpoint.id, '--delivery', '99999'], '--delivery is not a delivery of this endpoint'],
    ] as const) {
      const refused = run(...args);
      expect({ args, status: refused.status, stderr: refused.stderr }).toEqual({ args, status: 1, stderr: expect.stringContaining(says) });
    }
    expect(JSON.parse(run('webhooks:remove', endpoint.id).stdout)).toEqual({ removed: endpoint.id });
    const audit = run('audit', '--type', 'webhook.', '--limit', '10');
    expect(audit.stdout.trim().split('\n').map((l) => JSON.parse(l).type)).toEqual([
      'webhook.removed', 'webhook.redelivered', 'webhook.enabled', 'webhook.disabled', 'webhook.secret_rotated', 'webhook.tested', 'webhook.added',
    ]);
  }, cliTime(20));

  (SAML_PEERS ? it : it.skip)('saml:add-sp registers a service provider from its metadata file, saml:list-sps, saml:update-sp and saml:remove-sp; a refusal names its option', async () => {
    const env = { ...backend.env, DEFAULT_APP: 'books' };
    const run = (...args: string[]) => cli(args, { cwd: backend.dir, env });
    const keys = await spKeys();
    try {
      const config = { entity_id: 'https://crm.example.com/saml', acs: 'https://crm.example.com/acs', slo: 'https://crm.example.com/slo', key_file: keys.key_file, cert_file: keys.cert_file };
      const file = path.join(keys.dir, 'sp.xml');
      fs.writeFileSync(file, (await pysaml2<{ xml: string }>({ op: 'metadata', sp: config })).xml);
      const added = run('saml:add-sp', '--metadata', file, '--name', 'CRM', '--name-id-format', 'email');
      expect({ status: added.status, stderr: added.stderr }).toEqual({ status: 0, stderr: '' });
      const sp = JSON.parse(added.stdout) as { id: string };
      expect(sp).toMatchObject({ id: expect.stringMatching(/^sp_/), entity_id: config.entity_id, name: 'CRM', name_id_format: 'email', assertion_consumer_services: [config.acs] });
      expect(JSON.parse(run('saml:list-sps').stdout)).toEqual([expect.objectContaining({ id: sp.id })]);
      expect(JSON.parse(run('saml:update-sp', sp.id, '--attributes', '{"mail":"email"}').stdout)).toMatchObject({ attributes: { mail: 'email' } });
      for (const [args, says] of [
        [['saml:add-sp', '--metadata', file], '--metadata describes https://crm.example.com/saml, which is a service provider of this application already'],
        [['saml:add-sp', '--metadata', path.join(keys.dir, 'nothing.xml')], '--metadata'],
        [['saml:update-sp', sp.id, '--name-id-format', 'transient'], '--name-id-format must be email'],
        [['saml:remove-sp', 'sp_nope'], '--id is not a SAML service provider'],
      ] as const) {
        const refused = run(...args);
        expect({ args, status: refused.status, stderr: refused.stderr }).toEqual({ args, status: 1, stderr: expect.stringContaining(says) });
      }
      expect(JSON.parse(run('saml:remove-sp', sp.id).stdout)).toEqual({ removed: sp.id });
      // an organization's connection to its own identity provider
      const idpFile = path.join(keys.dir, 'idp.xml');
      fs.writeFileSync(idpFile, (await pysaml2Idp<{ xml: string }>({ op: 'metadata', idp: { entity_id: 'https://idp.acme.example', sso: 'https://idp.acme.example/sso', key_file: keys.key_file, cert_file: keys.cert_file } })).xml);
      const org = JSON.parse(run('organizations:create', 'Acme SSO', '--slug', `acme-sso-${Date.now().toString(36)}`).stdout) as { id: string };
      const connection = JSON.parse(run('organizations:add-connection', org.id, '--type', 'saml', '--metadata', idpFile, '--required').stdout) as { id: string };
      expect(connection).toMatchObject({ id: expect.stringMatching(/^con_/), type: 'saml', required: true, idp_entity_id: 'https://idp.acme.example', acs_url: expect.stringContaining('/acs') });
      expect(JSON.parse(run('organizations:connections', org.id).stdout)).toEqual([expect.objectContaining({ id: connection.id })]);
      const refused = run('organizations:add-connection', org.id, '--type', 'oidc', '--issuer', 'https://login.acme.example', '--client-id', 'x');
      expect({ status: refused.status, stderr: refused.stderr }).toEqual({ status: 1, stderr: expect.stringContaining('--client-secret is missing') });
      expect(JSON.parse(run('organizations:remove-connection', org.id, connection.id).stdout)).toEqual({ removed: connection.id });
    } finally {
      await stopPysaml2();
      fs.rmSync(keys.dir, { recursive: true, force: true });
    }
  }, cliTime(13));

  it('apis:add registers an API, apis:list, apis:update, apis:grant and apis:remove; roles:define, assign, of, unassign, list and remove; a refusal names its option', () => {
    const tag = Date.now().toString(36);
    const run = (...args: string[]) => cli(args, { cwd: backend.dir, env: { ...backend.env, DEFAULT_APP: `apis${tag}` } });
    expect(run('apps:create', `apis${tag}`).status).toBe(0);
    const identifier = `https://orders.example.com/${tag}`;
    const added = run('apis:add', identifier, '--name', 'Orders', '--scopes', 'read:orders write:orders', '--token-lifetime', '300');
    expect({ status: added.status, stderr: added.stderr }).toEqual({ status: 0, stderr: '' });
    const api = JSON.parse(added.stdout) as { id: string };
    expect(api).toMatchObject({ id: expect.stringMatching(/^api_[0-9a-f]{24}$/), identifier, name: 'Orders', scopes: ['read:orders', 'write:orders'], token_lifetime: 300 });
    expect(JSON.parse(run('apis:list').stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ id: api.id })]));
    expect(JSON.parse(run('apis:update', api.id, '--token-lifetime', '', '--rbac', 'true', '--permissions-in-token', 'true').stdout))
      .toMatchObject({ token_lifetime: 600, rbac: true, permissions_in_token: true });
    for (const [args, says] of [
      [['apis:add', identifier], '--identifier is'],
      [['apis:add', 'orders'], 'absolute URI'],
      [['apis:add', 'https://x.example.com/', '--scopes', 'openid'], '--scopes has openid'],
      [['apis:update', api.id, '--token-lifetime', '5'], '--token-lifetime must be a whole number of seconds from 60 to 86400'],
      [['apis:update', api.id, '--rbac', 'yes'], '--rbac must be true or false'],
      [['apis:grant', api.id, '--client', 'nobody', '--scopes', 'read:orders'], 'not a client'],
      [['apis:remove', 'api_nope'], '--id is not an API'],
    ] as const) {
      const refused = run(...args);
      expect({ args, status: refused.status, stderr: refused.stderr }).toEqual({ args, status: 1, stderr: expect.stringContaining(says) });
    }
    // a role with the API's scopes, given to a user and taken
    expect(run('users:create', `ada-${tag}@example.com`).status).toBe(0);
    expect(JSON.parse(run('roles:define', 'clerk', '--permissions', JSON.stringify({ [identifier]: ['read:orders'] }), '--description', 'takes orders').stdout))
      .toEqual({ name: 'clerk', description: 'takes orders', permissions: { [identifier]: ['read:orders'] } });
    expect(JSON.parse(run('roles:assign', `ada-${tag}@example.com`, 'clerk').stdout)).toEqual([expect.objectContaining({ name: 'clerk' })]);
    expect(JSON.parse(run('roles:of', `ada-${tag}@example.com`).stdout).map((r: { name: string }) => r.name)).toEqual(['clerk']);
    expect(run('roles:assign', `ada-${tag}@example.com`, 'nobody_here').stderr).toContain('--roles names "nobody_here", which is not a role');
    expect(JSON.parse(run('roles:unassign', `ada-${tag}@example.com`, 'clerk').stdout)).toEqual([]);
    expect(JSON.parse(run('roles:list').stdout).map((r: { name: string }) => r.name)).toEqual(['clerk']);
    expect(JSON.parse(run('roles:remove', 'clerk').stdout)).toEqual({ removed: 'clerk', held: 0 });
    expect(JSON.parse(run('apis:remove', api.id).stdout)).toEqual({ removed: api.id });
  }, cliTime(19));

  it('organizations: create with an owner, add a member, set roles, invite, verify a domain, list; the last owner stays; each refusal says what is wrong', () => {
    const tag = Date.now().toString(36);
    const env = { ...backend.env, DEFAULT_APP: `orgs${tag}` };
    const run = (...args: string[]) => cli(args, { cwd: backend.dir, env });
    expect(run('migrate').status).toBe(0);
    expect(run('apps:create', `orgs${tag}`).status).toBe(0);
    for (const who of [`ada-${tag}@acme.example`, `grace-${tag}@acme.example`]) expect(run('users:create', who).status).toBe(0);
    const created = run('organizations:create', 'Acme', '--slug', `acme-${tag}`, '--owner', `ada-${tag}@acme.example`);
    expect(created.status).toBe(0);
    const org = JSON.parse(created.stdout) as { id: string };
    expect(org).toMatchObject({ id: expect.stringMatching(/^org_/), name: 'Acme', slug: `acme-${tag}` });
    expect(JSON.parse(run('organizations:add-member', org.id, `grace-${tag}@acme.example`, '--roles', 'admin').stdout)).toEqual({ roles: ['admin'] });
    expect(JSON.parse(run('organizations:set-roles', org.id, `grace-${tag}@acme.example`, '--roles', 'admin,member').stdout)).toEqual({ roles: ['admin', 'member'] });
    expect(JSON.parse(run('organizations:members', org.id).stdout).map((m: { roles: string[] }) => m.roles)).toEqual([['owner'], ['admin', 'member']]);
    expect(JSON.parse(run('organizations:invite', org.id, `new-${tag}@partner.example`, '--roles', 'member', '--locale', 'de-DE').stdout))
      .toMatchObject({ email: `new-${tag}@partner.example`, state: 'pending', locale: 'de-DE' });
    expect(JSON.parse(run('organizations:verify-domain', org.id, 'Acme.Example').stdout)).toEqual({ domain: 'acme.example', verified: true, joinable: true });
    expect(JSON.parse(run('organizations:list').stdout).map((o: { id: string }) => o.id)).toContain(org.id);
    // its directory's SCIM token: printed once, listed without it, revoked; its groups mapped to roles
    const scim = JSON.parse(cli(['organizations:scim-token', org.id, '--description', 'Okta'], { cwd: backend.dir, env: { ...env, PUBLIC_BASE_URL: 'https://login.example.com' } }).stdout) as { token: string; id: string };
    expect(scim).toMatchObject({ token: expect.stringMatching(/^ghscim_/), scim_url: expect.stringMatching(/^https:\/\/([a-z0-9-]+\.)?login\.example\.com\/scim\/v2$/), id: expect.stringMatching(/^scim_/), description: 'Okta' });
    // where the server answers is not known here: no guessed address for the identity provider
    const unknown = run('organizations:scim-token', org.id, '--description', 'spare');
    expect(JSON.parse(unknown.stdout)).toMatchObject({ scim_url: null });
    expect(unknown.stderr).toContain('the server\'s address is not known here');
    const tokens = run('organizations:scim-tokens', org.id);
    expect(JSON.parse(tokens.stdout)).toEqual([expect.objectContaining({ description: 'spare' }), expect.objectContaining({ id: scim.id, description: 'Okta', revoked: null })]);
    expect(tokens.stdout).not.toContain(scim.token);
    expect(JSON.parse(run('organizations:scim-groups', org.id, '{"Admins":["admin"]}').stdout)).toEqual({ organization_id: org.id, group_roles: { Admins: ['admin'] } });
    expect(JSON.parse(run('organizations:revoke-scim-token', org.id, scim.id).stdout)).toEqual({ revoked: scim.id });
    expect(JSON.parse(run('organizations:scim-tokens', org.id).stdout).find((t: { id: string }) => t.id === scim.id).revoked).not.toBeNull();
    for (const [args, says] of [
      [['organizations:revoke-scim-token', org.id, 'scim_nope'], 'is not a SCIM token of this organization'],
      [['organizations:scim-groups', org.id, 'not json'], 'is not JSON'],
      [['organizations:remove-member', org.id, `ada-${tag}@acme.example`], 'without an owner'],
      [['organizations:create', 'Other', '--slug', `acme-${tag}`], 'is taken'],
      [['organizations:add-member', org.id, `ada-${tag}@acme.example`, '--roles', 'chief'], 'is not a role of this application'],
      [['organizations:members', 'org_nope'], 'is not an organization of this application'],
    ] as const) {
      const refused = run(...args);
      expect({ args, status: refused.status, stderr: refused.stderr }).toEqual({ args, status: 1, stderr: expect.stringContaining(says) });
    }
    const audit = run('audit', '--type', 'organization.', '--limit', '10');
    expect(audit.stdout.trim().split('\n').map((l) => JSON.parse(l).type)).toEqual([
      'organization.domain_joinable', 'organization.domain_added', 'organization.invitation_created', 'organization.member_roles_changed', 'organization.member_added', 'organization.member_added',
      'organization.created',
    ]);
  }, cliTime(25));

  it('one convention for the application (--app, DEFAULT_APP when omitted); users:show and users:find; apps:create says where its links point', async () => {
    const env = { ...backend.env, DEFAULT_APP: 'shop' };
    // (the test above created "shop")
    const listed = cli(['clients:list'], { cwd: backend.dir, env });
    expect(listed.status).toBe(0);
    expect(JSON.parse(listed.stdout)).toHaveLength(2);
    expect(cli(['providers:list'], { cwd: backend.dir, env }).stdout.trim()).toBe('[]');
    const added = cli(['providers:add', 'idp', '--issuer', 'https://idp.example.test', '--client-id', 'x', '--client-secret', 'provider-secret-1'], { cwd: backend.dir, env });
    expect(added.status).toBe(0);
    expect(added.stdout).not.toContain('provider-secret-1');
    expect(JSON.parse(cli(['providers:list', '--app', 'shop'], { cwd: backend.dir, env }).stdout)).toEqual([expect.objectContaining({ name: 'idp' })]);
    expect(cli(['providers:remove', 'idp'], { cwd: backend.dir, env }).stdout).toContain('removed provider idp');

    // an indexed attribute: declared, built by the command itself with --wait (after the delay every pod needs), listed, removed
    const indexing = cli(['attributes:index', 'familyName', '--wait'], { cwd: backend.dir, env });
    expect({ status: indexing.status, stdout: indexing.stdout }).toEqual({ status: 0, stdout: expect.stringMatching(/^indexed familyName: building\n(.|\n)*familyName is ready: searches use it\n$/) });
    expect(JSON.parse(cli(['attributes:list'], { cwd: backend.dir, env }).stdout)).toEqual([expect.objectContaining({ name: 'familyName', state: 'ready' })]);
    expect(cli(['attributes:index', 'email'], { cwd: backend.dir, env }).stderr).toContain('email has an index of its own');
    expect(cli(['attributes:unindex', 'familyName'], { cwd: backend.dir, env }).stdout).toContain('removed the index of familyName');
    expect(cli(['attributes:unindex', 'familyName'], { cwd: backend.dir, env })).toMatchObject({ status: 1, stderr: expect.stringContaining('is not indexed') });

    const created = cli(['apps:create', 'mall', '--json'], { cwd: backend.dir, env });
    expect(created.stderr).toContain('PUBLIC_BASE_URL is not set');
    expect(cli(['apps:create', 'mall2', '--json'], { cwd: backend.dir, env: { ...env, PUBLIC_BASE_URL: 'https://login.example.com' } }).stderr).toBe('');
    const login = JSON.parse(cli(['clients:list', '--app', 'mall2'], { cwd: backend.dir, env }).stdout).find((c: { features: string[] }) => c.features.includes('login_client'));
    // an application other than DEFAULT_APP answers at its name before PUBLIC_BASE_URL's host
    expect(login.settings.password_recover_url).toBe('https://mall2.login.example.com/reset-password');

    // a user created through the API's storage, then found and shown by the CLI
    const owner = JSON.parse(cli(['clients:list'], { cwd: backend.dir, env }).stdout).find((c: { features: string[] }) => c.features.includes('owner'));
    expect(owner).toBeDefined();
    expect(cli(['users:show', 'nobody@example.com'], { cwd: backend.dir, env }).stderr).toContain('has no user "nobody@example.com"');
    expect(JSON.parse(cli(['users:find', 'email is not null'], { cwd: backend.dir, env }).stdout)).toEqual([]);
    const db = openDatabase(backend.config.database);
    try {
      const shop = (await db.applications.findByName('shop'))!;
      await db.records.insert({
        applicationId: shop.id, typeName: 'user', uuid: '3b1d5d7e-0000-4000-8000-00000000cafe', email: 'ada@example.com', username: 'ada',
        passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g', emailVerified: null, attributes: { givenName: 'Ada' },
      }, new Date());
    } finally {
      await db.close();
    }
    for (const who of ['ada@example.com', 'ADA@example.com', 'ada', '3b1d5d7e-0000-4000-8000-00000000cafe']) {
      const shown = cli(['users:show', who], { cwd: backend.dir, env });
      expect(shown.status).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({ email: 'ada@example.com', givenName: 'Ada', profiles: [] });
      // its password's format, never its hash
      expect(JSON.parse(shown.stdout).password_format).toBe('argon2id');
      expect(shown.stdout).not.toContain('$argon2');
    }
    const found = cli(['users:find', "givenName = 'Ada'"], { cwd: backend.dir, env });
    expect(JSON.parse(found.stdout)).toEqual([expect.objectContaining({ email: 'ada@example.com', username: 'ada', lastLogin: null })]);
    expect(cli(['users:find', 'email = '], { cwd: backend.dir, env }).stderr).toContain('the filter is not valid');
  }, cliTime(29));

  it('users:signout ends every session of a user, users:disable and users:enable, and users:delete (with --yes) deletes the record, its history kept; gatehouse audit lists what the operator did', async () => {
    const env = { ...backend.env, DEFAULT_APP: 'shop', OPERATOR_NAME: 'ops-test' };
    const port = await freePort();
    const server = startNode(SERVER, { cwd: backend.dir, env: { ...env, PORT: String(port), LOG_LEVEL: 'info' } });
    try {
      await server.waitFor(/gatehouse api listening/);
      const clients = JSON.parse(cli(['clients:list'], { cwd: backend.dir, env }).stdout) as { client_id: string; client_secret: string; features: string[] }[];
      const login = clients.find((c) => c.features.includes('login_client'))!;
      const owner = clients.find((c) => c.features.includes('owner'))!;
      const B = `http://127.0.0.1:${port}`;
      const registered = await post(`${B}/oauth/register_native_traditional`, {
        client_id: login.client_id, locale: 'en-US', emailAddress: 'grace@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
        firstName: 'Grace', lastName: 'Hopper', displayName: 'grace',
      });
      expect(registered.body.stat).toBe('ok');
      const token = registered.body.access_token as string;
      const uuid = registered.body.capture_user.uuid as string;
      expect((await post(`${B}/entity`, { access_token: token })).body.stat).toBe('ok');

      const signedOut = cli(['users:signout', 'grace@example.com'], { cwd: backend.dir, env });
      expect(signedOut.status).toBe(0);
      expect(signedOut.stdout).toMatch(/ended the sessions of user \d+ \(.+\): 1 unspent token/);
      expect((await post(`${B}/entity`, { access_token: token })).body.code).toBe(413);
      // disabled: the right password is told so, users:show says since when; enabled: a new session
      const signIn = () => post(`${B}/oauth/auth_native_traditional`, { client_id: login.client_id, locale: 'en-US', signInEmailAddress: 'grace@example.com', currentPassword: 'correct horse battery' });
      expect(cli(['users:disable', 'grace@example.com'], { cwd: backend.dir, env }).stdout).toMatch(/^disabled user \d+/);
      expect((await signIn()).body).toMatchObject({ code: 210, message: expect.stringContaining('This account is disabled') });
      expect(JSON.parse(cli(['users:show', 'grace@example.com'], { cwd: backend.dir, env }).stdout).disabled).toEqual({ since: expect.stringMatching(/^\d{4}-\d{2}-\d{2} /), until: null, reason: null });
      // disabled again with a time and a reason (which replace the first); a time in the past or not a time is refused by its option
      expect(cli(['users:disable', 'grace@example.com', '--until', '2000-01-01T00:00:00Z'], { cwd: backend.dir, env }))
        .toMatchObject({ status: 1, stderr: expect.stringContaining('--until is not in the future') });
      expect(cli(['users:disable', 'grace@example.com', '--until', 'soon'], { cwd: backend.dir, env })).toMatchObject({ status: 1, stderr: expect.stringContaining('--until is not a time') });
      expect(cli(['users:disable', 'grace@example.com', '--until', '2099-01-01T00:00:00Z', '--reason', 'fraud review'], { cwd: backend.dir, env }).stdout)
        .toMatch(/^disabled user \d+ \(.+\) until 2099-01-01T00:00:00.000Z;/);
      expect(JSON.parse(cli(['users:show', 'grace@example.com'], { cwd: backend.dir, env }).stdout).disabled)
        .toMatchObject({ until: '2099-01-01 00:00:00.000000 +0000', reason: 'fraud review' });
      expect(cli(['users:enable', 'grace@example.com'], { cwd: backend.dir, env }).stdout).toMatch(/^enabled user \d+/);
      expect(JSON.parse(cli(['users:show', 'grace@example.com'], { cwd: backend.dir, env }).stdout).disabled).toBeUndefined();
      const again = await signIn();
      expect(again.body.stat).toBe('ok');
      // the user's activity, newest first, one JSON object per line: the disabled account's right password counted as a failure
      const activity = cli(['users:activity', 'grace@example.com'], { cwd: backend.dir, env });
      expect(activity.status).toBe(0);
      const lines = activity.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; [fact: string]: unknown });
      expect(lines.map((l) => l.type)).toEqual([
        'account.signed_in', 'account.enabled', 'account.disabled', 'account.sign_in_failed', 'account.disabled', 'account.signed_out', 'account.registered',
      ]);
      expect(lines[2]).toMatchObject({ actor: 'operator', reason: 'fraud review', until: '2099-01-01T00:00:00.000Z' });
      expect(lines[0]).toMatchObject({ method: 'password', client_id: login.client_id, address: '127.0.0.1', user_agent: expect.any(String) });
      expect(lines[3]).toMatchObject({ reason: 'account_disabled', count: 1 });
      const page = cli(['users:activity', 'grace@example.com', '--types', 'account.signed_in,account.registered', '--limit', '1'], { cwd: backend.dir, env });
      expect(page.stdout).toContain('"account.signed_in"');
      expect(page.stdout.trim().split('\n')).toHaveLength(1);
      const next = /run again with --cursor (\S+)/.exec(page.stderr)![1];
      expect(cli(['users:activity', 'grace@example.com', '--types', 'account.signed_in,account.registered', '--cursor', next], { cwd: backend.dir, env }).stdout)
        .toMatch(/^\{"type":"account\.registered".*\}\n$/);
      expect(cli(['users:activity', 'grace@example.com', '--types', 'account.nope'], { cwd: backend.dir, env }))
        .toMatchObject({ status: 1, stderr: expect.stringContaining('--types has "account.nope", which is not an activity type') });
      const before = new Date();

      // the user's data as one document (no secret), and its history: each version as what it changed, by whom
      const exported = path.join(backend.dir, 'grace.json');
      expect(cli(['users:export', 'grace@example.com', '--out', exported], { cwd: backend.dir, env }).status).toBe(0);
      expect((fs.statSync(exported).mode & 0o777).toString(8)).toBe('600');
      const document = JSON.parse(fs.readFileSync(exported, 'utf8'));
      expect(document).toMatchObject({ format: 'gatehouse-account-export/1', record: { uuid, email: 'grace@example.com' }, account: { has_password: true } });
      expect(JSON.stringify(document)).not.toContain('$argon2');
      expect(cli(['users:export', 'grace@example.com', '--out', exported], { cwd: backend.dir, env }).status).toBe(1);
      const history = cli(['users:history', 'grace@example.com'], { cwd: backend.dir, env }).stdout.trim().split('\n').map((l) => JSON.parse(l));
      expect(history.at(-1)).toMatchObject({ version: 1, by: { type: 'record.created', actor: { kind: 'account' } } });
      expect(history.at(-1).changes).toEqual(expect.arrayContaining([{ attribute: 'email', to: 'grace@example.com' }]));

      const asked = cli(['users:delete', uuid], { cwd: backend.dir, env });
      expect(asked.status).toBe(1);
      expect(asked.stderr).toContain('run again with --yes');
      expect((await post(`${B}/entity`, { access_token: again.body.access_token })).body.stat).toBe('ok');
      const deleted = cli(['users:delete', uuid, '--yes'], { cwd: backend.dir, env });
      expect(deleted.stderr).toBe('');
      expect(deleted.stdout).toContain(`deleted user`);
      expect(deleted.stdout).toContain('grace@example.com');
      expect(cli(['users:show', uuid], { cwd: backend.dir, env }).status).toBe(1);
      const auth = { authorization: basic(owner.client_id, owner.client_secret) };
      expect((await post(`${B}/entity`, { type_name: 'user', uuid }, auth)).body.code).toBe(310);
      expect((await post(`${B}/entity`, { access_token: again.body.access_token })).body.code).toBe(413);
      // the record as it was before, and nothing after its deletion
      const at = (d: Date) => d.toISOString();
      expect((await post(`${B}/versions/entity`, { type_name: 'user', uuid, timestamp: at(before) }, auth)).body.result).toMatchObject({ email: 'grace@example.com' });
      expect((await post(`${B}/versions/entity`, { type_name: 'user', uuid, timestamp: at(new Date()) }, auth)).body.code).toBe(310);
      // erased: its history goes too, and the command says so when run again
      expect(cli(['users:erase', uuid], { cwd: backend.dir, env })).toMatchObject({ status: 1, stderr: expect.stringContaining('run again with --yes') });
      expect(cli(['users:erase', uuid, '--yes'], { cwd: backend.dir, env }).stdout).toMatch(/^erased user \d+ of application "shop"; what remains is its tombstone/);
      expect((await post(`${B}/versions/entity`, { type_name: 'user', uuid, timestamp: at(before) }, auth)).body.code).toBe(310);
      // again, by its uuid (which its tombstone keeps as a keyed digest only): done already, and when
      expect(cli(['users:erase', uuid, '--yes'], { cwd: backend.dir, env })).toMatchObject({ status: 0, stdout: expect.stringMatching(/^user \d+ was erased already, at /) });

      // the operator's actions in the audit log, newest first, one JSON object per line; a bad filter names its option
      const audit = cli(['audit', '--actor', 'operator:ops-test', '--type', 'account.'], { cwd: backend.dir, env });
      expect(audit.status).toBe(0);
      const entries = audit.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; actor: unknown; subject: { id: string } });
      // (each copy of the data an operator takes is audited too; one refused for its file is not taken)
      expect(entries.map((e) => e.type)).toEqual(['account.erased', 'account.exported', 'account.enabled', 'account.disabled', 'account.disabled', 'account.signed_out']);
      expect(entries[0]).toMatchObject({ actor: { kind: 'operator', name: 'ops-test' }, subject: { kind: 'record' } });
      expect(cli(['audit', '--subject', `record:${entries[0].subject.id}`, '--limit', '2'], { cwd: backend.dir, env }).stdout).toContain('"record.deleted"');
      const paged = cli(['audit', '--limit', '1'], { cwd: backend.dir, env });
      expect(paged.stderr).toMatch(/more entries: run again with --before \d+/);
      expect(cli(['audit', '--since', 'yesterday'], { cwd: backend.dir, env })).toMatchObject({ status: 1, stderr: expect.stringContaining('--since must be an ISO 8601 time') });
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, cliTime(24));

  it('the long-running processes answer --help and refuse other arguments', () => {
    for (const script of [SERVER, WORKER, path.join(ROOT, 'dist/src/dashboard.js')]) {
      const help = spawnSync(process.execPath, [script, '--help'], { encoding: 'utf8', env: childEnv({}) });
      expect(help.status).toBe(0);
      expect(help.stdout).toContain('Configured by environment variables only');
      const wrong = spawnSync(process.execPath, [script, '--port', '9'], { encoding: 'utf8', env: childEnv({}) });
      expect(wrong.status).toBe(64);
      expect(wrong.stderr).toContain('unknown argument "--port"');
    }
  }, cliTime(2));

  it('init creates DEFAULT_APP once (secrets only on a terminal), then has nothing to do', () => {
    const env = { ...backend.env, DEFAULT_APP: 'firstapp' };
    // (the test above migrated this database)
    const first = cli(['init'], { cwd: backend.dir, env });
    expect(first.status).toBe(0);
    expect(first.stdout).toMatch(/created the application "firstapp"/);
    expect(first.stdout).toMatch(/owner client\s+client_id=\w+/);
    expect(first.stdout).not.toContain('client_secret'); // the output is no terminal here
    expect(first.stdout).toContain('npx gatehouse clients:list --app firstapp');
    const again = cli(['init'], { cwd: backend.dir, env });
    expect(again.status).toBe(0);
    expect(again.stdout).toContain('"firstapp" exists; nothing to do');
    const clients = JSON.parse(cli(['clients:list', '--app', 'firstapp'], { cwd: backend.dir, env }).stdout) as unknown[];
    expect(clients).toHaveLength(2);
  }, cliTime(3));

  it('a broken flow fails flows:import with a message naming each broken place', () => {
    const broken = fs.mkdtempSync(path.join(backend.dir, 'flow-'));
    const flow = JSON.parse(fs.readFileSync(path.join(ROOT, 'flows/standard/flow.json'), 'utf8'));
    const translations = JSON.parse(fs.readFileSync(path.join(ROOT, 'flows/standard/translations.json'), 'utf8'));
    flow.fields.firstName.validation.push({ rule: 'shoutCase', message: 'firstName.required' });
    flow.forms.signInForm.fields.push({ name: 'favouriteColour', required: true });
    flow.locales.push('it-IT');
    delete translations['lastName.label'];
    fs.writeFileSync(path.join(broken, 'flow.json'), JSON.stringify(flow));
    fs.writeFileSync(path.join(broken, 'translations.json'), JSON.stringify(translations));
    const r = cli(['flows:import', broken, '--app', 'shop'], { cwd: backend.dir, env: backend.env });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('fields.firstName: validation[2].rule: "shoutCase" is not a rule; use one of');
    expect(r.stderr).toContain('forms.signInForm.fields[2]: field "favouriteColour" is not defined');
    expect(r.stderr).toContain('fields.lastName.label: translation "lastName.label" is not defined');
    expect(r.stderr).toContain('"emailAddress.label" has no text for it-IT');

    fs.writeFileSync(path.join(broken, 'flow.json'), '{ not json');
    expect(cli(['flows:import', broken, '--app', 'shop'], { cwd: backend.dir, env: backend.env }).stderr).toMatch(/flow\.json: not valid JSON/);
    const invalid = cli(['flows:validate', broken], { cwd: backend.dir, env: {} });
    expect(invalid.status).toBe(1);
    expect(invalid.stderr).toMatch(/flow\.json: not valid JSON/);
  }, cliTime(3));
});

skipUnless(onMysql, 'stored procedures need a mysql: DATABASE_URL')('gatehouse migrate with and without stored procedures', () => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await createTestBackend();
  });
  afterAll(() => backend.cleanup());

  it('installs none with DATABASE_PROCEDURES=off; turned on, they are pending until migrate installs them', () => {
    const run = (args: string[], procedures: 'on' | 'off') => cli(args, { cwd: backend.dir, env: { ...backend.env, DATABASE_PROCEDURES: procedures } });
    expect(run(['migrate'], 'off').stdout).toContain('0006-sign-in-procedure');
    expect(run(['migrate:status'], 'off')).toMatchObject({ status: 0, stdout: 'the database is up to date\n' });
    expect(run(['migrate:status'], 'on')).toMatchObject({ status: 1, stdout: 'pending: procedure gh_rotate_refresh 3, procedure gh_sign_in 1, procedure gh_sign_in_events 1, procedure gh_sign_in_with_events 1, procedure gh_rotate_with_event 2, procedure gh_spend_with_event 1\n' });
    expect(run(['migrate'], 'on')).toMatchObject({ status: 0, stdout: 'applied: procedure gh_rotate_refresh 3, procedure gh_sign_in 1, procedure gh_sign_in_events 1, procedure gh_sign_in_with_events 1, procedure gh_rotate_with_event 2, procedure gh_spend_with_event 1\n' });
    expect(run(['migrate:status'], 'on')).toMatchObject({ status: 0, stdout: 'the database is up to date\n' });
  }, cliTime(1));

  it('a procedure installed before procedures carried their version is marked in place when its body is the same, reinstalled when not', async () => {
    const run = (args: string[]) => cli(args, { cwd: backend.dir, env: { ...backend.env, DATABASE_PROCEDURES: 'on' } });
    const db = await mysql.createConnection(backend.env.DATABASE_URL!);
    const comments = async () => Object.fromEntries(((await db.query(
      "SELECT ROUTINE_NAME AS n, ROUTINE_COMMENT AS c FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() ORDER BY n",
    ))[0] as { n: string; c: string }[]).map((r) => [r.n, r.c]));
    try {
      expect(run(['migrate']).status).toBe(0);
      // as the releases before the versioned sources installed them: the same body, no mark
      await db.query("ALTER PROCEDURE gh_sign_in COMMENT ''");
      // and one whose body is not this version's
      await db.query('DROP PROCEDURE gh_rotate_refresh');
      await db.query('CREATE PROCEDURE gh_rotate_refresh() BEGIN SELECT 0 AS rotated; END');
      expect(run(['migrate:status'])).toMatchObject({ status: 1, stdout: 'pending: procedure gh_rotate_refresh 3\n' });
      expect(run(['migrate'])).toMatchObject({ status: 0, stdout: 'applied: procedure gh_rotate_refresh 3\n' });
      expect(await comments()).toEqual({
        gh_rotate_refresh: 'gatehouse gh_rotate_refresh 3', gh_rotate_with_event: 'gatehouse gh_rotate_with_event 2', gh_sign_in: 'gatehouse gh_sign_in 1',
        gh_sign_in_events: 'gatehouse gh_sign_in_events 1', gh_sign_in_with_events: 'gatehouse gh_sign_in_with_events 1', gh_spend_with_event: 'gatehouse gh_spend_with_event 1',
      });
      expect(run(['migrate:status'])).toMatchObject({ status: 0, stdout: 'the database is up to date\n' });
    } finally {
      await db.end();
    }
  }, cliTime(1));
});

skipUnless(onMysql && redisUrl !== undefined, 'the production-shape tests need a mysql: DATABASE_URL and REDIS_URL')('production shape: MariaDB, Redis, two api processes and a worker', () => {
  let backend: TestBackend;
  beforeAll(async () => {
    backend = await createTestBackend({ redis: true });
  });
  afterAll(() => backend.cleanup());

  it('refuses to start with pending migrations, then serves from any pod after gatehouse migrate', async () => {
    const env = { ...backend.env, LOG_LEVEL: 'info' };
    const early = startNode(SERVER, { cwd: backend.dir, env: { ...env, PORT: String(await freePort()) } });
    expect(await early.exited).toBe(1);
    expect(early.output()).toContain('pending migration');

    expect(cli(['migrate'], { cwd: backend.dir, env }).status).toBe(0);
    const local = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env }).stdout);
    const owner = basic(local.clients.owner.client_id, local.clients.owner.client_secret);

    const [portA, portB] = [await freePort(), await freePort()];
    const apiA = startNode(SERVER, { cwd: backend.dir, env: { ...env, PORT: String(portA) } });
    const apiB = startNode(SERVER, { cwd: backend.dir, env: { ...env, PORT: String(portB) } });
    const workerDir = fs.mkdtempSync(path.join(backend.dir, 'worker-'));
    const worker = startNode(WORKER, { cwd: workerDir, env });
    try {
      await Promise.all([apiA.waitFor(/api listening/), apiB.waitFor(/api listening/), worker.waitFor(/worker ready/)]);
      const added = await post(`http://127.0.0.1:${portA}/clients/add`, { description: 'made on A', features: '["owner"]' }, { Authorization: owner });
      expect(added.body.stat).toBe('ok');
      const onB = await get(`http://127.0.0.1:${portB}/clients/list`, { Authorization: basic(added.body.client_id, added.body.client_secret) });
      expect(onB.body.stat).toBe('ok');

      // a committed outbox job, enqueued as an api pod does: the worker process sends it
      const db = openDatabase(backend.config.database);
      const queue = new Queue('mail', { connection: { url: redisUrl }, prefix: backend.env.REDIS_PREFIX });
      const outbox = createOutbox({ db, queue: { enqueue: async (j) => void (await queue.add(j.name, j.data, { jobId: j.id })), schedule: async () => {}, close: async () => {} }, logger: createLogger('silent') });
      const application = (await db.applications.findByName('local'))!;
      const job = mailRow(new SecretBox(backend.config.secretKey), application, {
        template: 'welcome', locale: 'de-DE', to: 'ada@example.com', name: 'From the worker', link: 'https://app.example/verify?verification_code=x',
      });
      await writeRows(db, [job]);
      await outbox.dispatch([job]);
      const eml = path.join(workerDir, 'var/mail', `${job.id}.eml`);
      for (let i = 0; i < 200 && (await db.outbox.find(job.id))?.status !== 'done'; i++) await new Promise((r) => setTimeout(r, 50));
      expect((await db.outbox.find(job.id))?.status).toBe('done');
      expect((await simpleParser(fs.readFileSync(eml))).text).toContain('Willkommen, From the worker!');
      await queue.close();
      await db.close();
    } finally {
      const codes = await Promise.all([apiA.stop(), apiB.stop(), worker.stop()]);
      expect(codes).toEqual([0, 0, 0]);
    }
  }, cliTime(6));
});
