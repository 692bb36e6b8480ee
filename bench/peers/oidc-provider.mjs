// panva/oidc-provider as a refresh-token server for `npm run bench:peers`: one confidential
// client (client_secret_basic), refresh token rotation on, an in-memory adapter, an RS256 ID
// token with each refresh (scope openid offline_access), and Gatehouse's token lifetimes
// (access 1 hour, refresh 90 days). It mints one refresh token per connection at start and
// prints them as JSON; the bench then chains each connection's token, as for Gatehouse.
//
// The adapter is a plain Map with a Set of token keys per grant. oidc-provider's bundled
// development adapter keeps at most 1,000 entries (an LRU) and rescans every token of a grant
// on each write: under this load it dropped live refresh tokens (about 7 % of requests failed
// with invalid_grant) and slowed down as the grants grew, which would flatter Gatehouse.
//
// With a third argument, a mysql:// URL, it keeps everything in MariaDB instead, through a durable
// adapter of its own written as oidc-provider's documentation describes one (a table of models
// with the payload as JSON, found by model and id, consumed by an UPDATE, revoked by grant): the
// standalone provider on the same database as Gatehouse, every write committed before it answers,
// over a pool of 20 connections as Gatehouse's.
//
// With a fourth argument `equal`, the durable adapter gives what Gatehouse's OpenID provider gives
// (docs/openid-connect.md): token ids stored as their SHA-256 (a copy of the table signs nobody
// in), a code or refresh token spent once under concurrency (a conditional UPDATE; the loser gets
// invalid_grant), the spend and its event in one transaction, an account's tokens found by an
// index (sign out everywhere, erase), expired rows found by an index (the sweep), and the account
// read on each grant (a disabled account gets nothing; its claims from its row).
//   node oidc-provider.mjs PORT TOKENS [mysql://USER@HOST:PORT/DATABASE [equal]]
import { createHash, generateKeyPairSync } from 'node:crypto';
import mysql from 'mysql2/promise';
import Provider, { errors } from 'oidc-provider';

const [port, count, databaseUrl, mode] = [Number(process.argv[2]), Number(process.argv[3] ?? 50), process.argv[4], process.argv[5]];
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const DAY = 86_400;
/** Every model in one Map, nothing evicted; grants index their tokens for revokeByGrantId. */
const store = new Map();
const grants = new Map();
const byUid = new Map();
const byUserCode = new Map();
const GRANTABLE = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest']);
class MapAdapter {
  constructor(model) { this.model = model; }
  key(id) { return `${this.model}:${id}`; }
  async upsert(id, payload, expiresIn) {
    const key = this.key(id);
    store.set(key, { payload, expiresAt: typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Infinity });
    if (GRANTABLE.has(this.model) && payload.grantId) {
      if (!grants.has(payload.grantId)) grants.set(payload.grantId, new Set());
      grants.get(payload.grantId).add(key);
    }
    if (this.model === 'Session' && payload.uid) byUid.set(payload.uid, id);
    if (payload.userCode) byUserCode.set(payload.userCode, id);
  }
  async find(id) {
    const entry = store.get(this.key(id));
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      store.delete(this.key(id));
      return undefined;
    }
    return entry.payload;
  }
  async findByUid(uid) { return this.find(byUid.get(uid)); }
  async findByUserCode(userCode) { return this.find(byUserCode.get(userCode)); }
  async consume(id) {
    const entry = store.get(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id) {
    const key = this.key(id);
    const entry = store.get(key);
    store.delete(key);
    if (entry?.payload.grantId) grants.get(entry.payload.grantId)?.delete(key);
  }
  async revokeByGrantId(grantId) {
    for (const key of grants.get(grantId) ?? []) store.delete(key);
    grants.delete(grantId);
  }
}

/** The same contract over one MariaDB table (ids hashed by nothing: the standalone provider stores them as given). */
async function mariadbAdapter(url) {
  const pool = mysql.createPool({ uri: url, connectionLimit: 20 });
  await pool.query('DROP TABLE IF EXISTS oidc_bench_models');
  await pool.query(`CREATE TABLE oidc_bench_models (
    model VARCHAR(40) NOT NULL, id VARCHAR(255) NOT NULL, payload JSON NOT NULL, grant_id VARCHAR(255) NULL, uid VARCHAR(255) NULL,
    user_code VARCHAR(255) NULL, consumed_at DATETIME NULL, expires_at DATETIME NULL,
    PRIMARY KEY (model, id), KEY by_grant (grant_id), KEY by_uid (uid), KEY by_user_code (user_code)
  ) ENGINE=InnoDB`);
  const found = ([rows]) => {
    const row = rows[0];
    if (!row || (row.expires_at && row.expires_at.getTime() <= Date.now())) return undefined;
    const payload = typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload;
    return { ...payload, ...(row.consumed_at && { consumed: Math.floor(row.consumed_at.getTime() / 1000) }) };
  };
  return class MariaDbAdapter {
    constructor(model) { this.model = model; }
    async upsert(id, payload, expiresIn) {
      await pool.execute(
        'INSERT INTO oidc_bench_models (model, id, payload, grant_id, uid, user_code, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?) '
        + 'ON DUPLICATE KEY UPDATE payload = VALUES(payload), grant_id = VALUES(grant_id), uid = VALUES(uid), user_code = VALUES(user_code), expires_at = VALUES(expires_at)',
        [this.model, id, JSON.stringify(payload), payload.grantId ?? null, payload.uid ?? null, payload.userCode ?? null,
          typeof expiresIn === 'number' ? new Date(Date.now() + expiresIn * 1000) : null],
      );
    }
    async find(id) { return found(await pool.execute('SELECT * FROM oidc_bench_models WHERE model = ? AND id = ?', [this.model, id])); }
    async findByUid(uid) { return found(await pool.execute('SELECT * FROM oidc_bench_models WHERE model = ? AND uid = ?', [this.model, uid])); }
    async findByUserCode(code) { return found(await pool.execute('SELECT * FROM oidc_bench_models WHERE model = ? AND user_code = ?', [this.model, code])); }
    async consume(id) { await pool.execute('UPDATE oidc_bench_models SET consumed_at = NOW() WHERE model = ? AND id = ?', [this.model, id]); }
    async destroy(id) { await pool.execute('DELETE FROM oidc_bench_models WHERE model = ? AND id = ?', [this.model, id]); }
    async revokeByGrantId(grantId) { await pool.execute('DELETE FROM oidc_bench_models WHERE grant_id = ?', [grantId]); }
  };
}

/** The adapter with Gatehouse's guarantees (see the top of this file), and the account lookup it pairs with. */
async function equalAdapter(url) {
  const pool = mysql.createPool({ uri: url, connectionLimit: 20 });
  for (const t of ['oidc_equal_models', 'oidc_equal_events', 'oidc_equal_accounts']) await pool.query(`DROP TABLE IF EXISTS ${t}`);
  await pool.query(`CREATE TABLE oidc_equal_models (
    model VARCHAR(40) NOT NULL, id_hash CHAR(64) NOT NULL, payload JSON NOT NULL, grant_id VARCHAR(255) NULL, account_id VARCHAR(255) NULL,
    uid_hash CHAR(64) NULL, user_code VARCHAR(255) NULL, consumed_at DATETIME(3) NULL, expires_at DATETIME(3) NULL,
    PRIMARY KEY (model, id_hash), KEY by_grant (grant_id), KEY by_account (account_id), KEY by_uid (uid_hash), KEY by_user_code (user_code), KEY by_expiry (expires_at)
  ) ENGINE=InnoDB`);
  await pool.query(`CREATE TABLE oidc_equal_events (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, type VARCHAR(64) NOT NULL, account_id VARCHAR(255) NOT NULL, client_id VARCHAR(255) NULL,
    occurred_at DATETIME(3) NOT NULL, data JSON NOT NULL, KEY by_account (account_id, occurred_at, id)
  ) ENGINE=InnoDB`);
  await pool.query(`CREATE TABLE oidc_equal_accounts (
    id VARCHAR(255) NOT NULL PRIMARY KEY, email VARCHAR(255) NOT NULL, disabled_at DATETIME(3) NULL
  ) ENGINE=InnoDB`);
  const hash = (v) => createHash('sha256').update(String(v)).digest('hex');
  const found = ([rows]) => {
    const row = rows[0];
    if (!row || (row.expires_at && row.expires_at.getTime() <= Date.now())) return undefined;
    const payload = typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload;
    return { ...payload, ...(row.consumed_at && { consumed: Math.floor(row.consumed_at.getTime() / 1000) }) };
  };
  const SPENT_WITH_EVENT = { AuthorizationCode: 'oidc.code_redeemed', RefreshToken: 'oidc.token_refreshed' };
  class EqualAdapter {
    constructor(model) { this.model = model; }
    async upsert(id, payload, expiresIn) {
      await pool.execute(
        'INSERT INTO oidc_equal_models (model, id_hash, payload, grant_id, account_id, uid_hash, user_code, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) '
        + 'ON DUPLICATE KEY UPDATE payload = VALUES(payload), grant_id = VALUES(grant_id), account_id = VALUES(account_id), uid_hash = VALUES(uid_hash), '
        + 'user_code = VALUES(user_code), expires_at = VALUES(expires_at)',
        [this.model, hash(id), JSON.stringify(payload), payload.grantId ?? null, payload.accountId ?? null, payload.uid ? hash(payload.uid) : null,
          payload.userCode ?? null, typeof expiresIn === 'number' ? new Date(Date.now() + expiresIn * 1000) : null],
      );
    }
    async find(id) { return found(await pool.execute('SELECT * FROM oidc_equal_models WHERE model = ? AND id_hash = ?', [this.model, hash(id)])); }
    async findByUid(uid) { return found(await pool.execute('SELECT * FROM oidc_equal_models WHERE model = ? AND uid_hash = ?', [this.model, hash(uid)])); }
    async findByUserCode(code) { return found(await pool.execute('SELECT * FROM oidc_equal_models WHERE model = ? AND user_code = ?', [this.model, code])); }
    async consume(id) {
      const type = SPENT_WITH_EVENT[this.model];
      const spend = 'UPDATE oidc_equal_models SET consumed_at = NOW(3) WHERE model = ? AND id_hash = ? AND consumed_at IS NULL';
      if (!type) {
        await pool.execute(spend, [this.model, hash(id)]);
        return;
      }
      // spent once, with its event, in one transaction: of two racing for one token, one wins
      const conn = await pool.getConnection();
      try {
        await conn.query('START TRANSACTION');
        const [result] = await conn.execute(spend, [this.model, hash(id)]);
        if (result.affectedRows !== 1) {
          await conn.query('ROLLBACK');
          throw new errors.InvalidGrant('grant request is invalid');
        }
        await conn.execute(
          "INSERT INTO oidc_equal_events (type, account_id, client_id, occurred_at, data) SELECT ?, account_id, JSON_UNQUOTE(JSON_EXTRACT(payload, '$.clientId')), NOW(3), '{}' "
          + 'FROM oidc_equal_models WHERE model = ? AND id_hash = ?',
          [type, this.model, hash(id)],
        );
        await conn.query('COMMIT');
      } catch (e) {
        await conn.query('ROLLBACK').catch(() => undefined);
        throw e;
      } finally {
        conn.release();
      }
    }
    async destroy(id) { await pool.execute('DELETE FROM oidc_equal_models WHERE model = ? AND id_hash = ?', [this.model, hash(id)]); }
    async revokeByGrantId(grantId) { await pool.execute('DELETE FROM oidc_equal_models WHERE grant_id = ?', [grantId]); }
  }
  /** The account on each grant: none when disabled; its claims from its row. */
  const findAccount = async (_ctx, sub) => {
    const [rows] = await pool.execute('SELECT email, disabled_at FROM oidc_equal_accounts WHERE id = ?', [sub]);
    const row = rows[0];
    if (!row || row.disabled_at) return undefined;
    return { accountId: sub, claims: () => ({ sub, email: row.email }) };
  };
  const addAccounts = async (ids) => {
    for (const id of ids) await pool.execute('INSERT INTO oidc_equal_accounts (id, email) VALUES (?, ?)', [id, `${id}@example.com`]);
  };
  return { EqualAdapter, findAccount, addAccounts };
}

const equal = databaseUrl && mode === 'equal' ? await equalAdapter(databaseUrl) : undefined;
if (equal) await equal.addAccounts(Array.from({ length: count }, (_, i) => `user${i}`));

const provider = new Provider(`http://127.0.0.1:${port}`, {
  adapter: equal ? equal.EqualAdapter : databaseUrl ? await mariadbAdapter(databaseUrl) : MapAdapter,
  clients: [{
    client_id: 'bench', client_secret: 'bench-secret-0123456789abcdef', token_endpoint_auth_method: 'client_secret_basic',
    grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], redirect_uris: ['https://bench.example.com/'],
  }],
  jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'bench', use: 'sig', alg: 'RS256' }] },
  scopes: ['openid', 'offline_access'],
  rotateRefreshToken: true,
  ttl: { AccessToken: 3600, IdToken: 3600, RefreshToken: 90 * DAY, Grant: 90 * DAY, Session: 90 * DAY, Interaction: 600, AuthorizationCode: 60 },
  findAccount: equal ? equal.findAccount : (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
  features: { devInteractions: { enabled: false } },
});
provider.on('server_error', (_ctx, err) => process.stderr.write(`oidc-provider server_error: ${err.stack}\n`));

const client = await provider.Client.find('bench');
const tokens = [];
for (let i = 0; i < count; i++) {
  const accountId = `user${i}`;
  const grant = new provider.Grant({ accountId, clientId: 'bench' });
  grant.addOIDCScope('openid offline_access');
  const grantId = await grant.save();
  const token = new provider.RefreshToken({
    accountId, client, grantId, scope: 'openid offline_access', gty: 'authorization_code', authTime: Math.floor(Date.now() / 1000),
  });
  tokens.push(await token.save());
}
provider.listen(port, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ listening: port, tokens })}\n`));
