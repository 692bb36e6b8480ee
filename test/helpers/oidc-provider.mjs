// A real OpenID Connect provider for the tests: panva's oidc-provider on 127.0.0.1, with its
// development login and consent pages. Any login name signs in; the name decides the claims:
//   "noemail…"     no email at all
//   "unverified…"  an email the provider did not verify
//   anything else  NAME@example.test, verified
// Usage: node oidc-provider.mjs PORT REDIRECT_URI [REDIRECT_URI…]; prints "listening" when ready.
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const [port, ...redirectUris] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

// a signing key of its own (RS256): the library's quick-start keys are for development only
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  jwks: { keys: [jwk] },
  clients: [{
    client_id: 'gatehouse', client_secret: 'provider-secret', redirect_uris: redirectUris,
    grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic',
  }],
  claims: {
    openid: ['sub'], email: ['email', 'email_verified'], phone: ['phone_number'],
    profile: ['name', 'given_name', 'family_name', 'picture', 'preferred_username', 'birthdate'],
  },
  async findAccount(_ctx, id) {
    const name = String(id);
    return {
      accountId: name,
      async claims() {
        return {
          sub: name,
          ...(name.startsWith('noemail') ? {} : { email: `${name}@example.test`, email_verified: !name.startsWith('unverified') }),
          name: `${name[0].toUpperCase()}${name.slice(1)} Tester`, given_name: `${name[0].toUpperCase()}${name.slice(1)}`, family_name: 'Tester',
          picture: `https://pictures.example.test/${name}.png`, preferred_username: name, birthdate: '1815-12-10', phone_number: '+15551234567',
        };
      },
    };
  },
  features: { devInteractions: { enabled: true } },
  pkce: { required: () => true },
});
provider.on("server_error", (_ctx, err) => process.stderr.write(`provider error: ${err.stack}\n`));
provider.listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\n'));
