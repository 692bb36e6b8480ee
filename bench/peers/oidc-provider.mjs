// panva/oidc-provider as a refresh-token server for `npm run bench:peers`: one confidential
// client (client_secret_basic), refresh token rotation on, the in-memory adapter, an RS256 ID
// token with each refresh (scope openid offline_access), and Gatehouse's token lifetimes
// (access 1 hour, refresh 90 days). It mints one refresh token per connection at start and
// prints them as JSON; the bench then chains each connection's token, as for Gatehouse.
//   node oidc-provider.mjs PORT TOKENS
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const [port, count] = [Number(process.argv[2]), Number(process.argv[3] ?? 50)];
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const DAY = 86_400;
const provider = new Provider(`http://127.0.0.1:${port}`, {
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
