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
//   node oidc-provider.mjs PORT TOKENS
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const [port, count] = [Number(process.argv[2]), Number(process.argv[3] ?? 50)];
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

const provider = new Provider(`http://127.0.0.1:${port}`, {
  adapter: MapAdapter,
  clients: [{
    client_id: 'bench', client_secret: 'bench-secret-0123456789abcdef', token_endpoint_auth_method: 'client_secret_basic',
    grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], redirect_uris: ['https://bench.example.com/'],
  }],
  jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'bench', use: 'sig', alg: 'RS256' }] },
  scopes: ['openid', 'offline_access'],
  rotateRefreshToken: true,
  ttl: { AccessToken: 3600, IdToken: 3600, RefreshToken: 90 * DAY, Grant: 90 * DAY, Session: 90 * DAY, Interaction: 600, AuthorizationCode: 60 },
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
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
