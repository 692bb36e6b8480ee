import type { Storage } from '../storage';
import type { SocialStore, StoredProvider } from '../storage/social';
import type { SecretBox } from '../secrets';

export const PROVIDER_KINDS = ['oidc', 'github'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/** A provider's name is part of its URLs (/social/{name}/start): a short lowercase label. */
export const PROVIDER_NAME = /^[a-z][a-z0-9-]{0,31}$/;

export interface NewProvider {
  name: string;
  kind: ProviderKind;
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes?: string[];
}

/** What is shown of a provider: never its secret. */
export type ProviderView = Omit<StoredProvider, 'secretSealed' | 'applicationId' | 'id'>;

/** What a provider's secret is sealed to: its application and name. */
export const providerBinding = (applicationId: number, name: string) => `provider:${applicationId}:${name}`;

/** A provider as it is shown: never its secret. */
export const providerView = ({ secretSealed: _s, applicationId: _a, id: _i, ...rest }: StoredProvider): ProviderView => rest;

/**
 * A new provider's row, checked: a name fit for URLs, a known kind, an https issuer (http on this
 * machine), the client id and secret the provider gave, scope names (`openid` always for OpenID
 * Connect). The secret is sealed to the application and the name.
 */
export function providerRow(box: SecretBox, applicationId: number, input: NewProvider): Omit<StoredProvider, 'id'> {
  if (!PROVIDER_NAME.test(input.name)) throw new ProviderInputError('name', 'must be a lowercase label of letters, digits and -, such as google');
  if (!PROVIDER_KINDS.includes(input.kind)) throw new ProviderInputError('kind', `must be one of ${PROVIDER_KINDS.join(', ')}`);
  const issuer = issuerUrl(input.issuer, input.kind);
  if (!input.clientId || input.clientId.length > 255) throw new ProviderInputError('clientId', 'must be the client id the provider gave this application');
  if (!input.clientSecret || input.clientSecret.length > 512) throw new ProviderInputError('clientSecret', 'must be the client secret the provider gave this application');
  const scopes = input.scopes?.length ? input.scopes : input.kind === 'github' ? ['read:user', 'user:email'] : ['openid', 'email', 'profile'];
  if (scopes.some((s) => !/^[\x21\x23-\x5B\x5D-\x7E]{1,64}$/.test(s))) throw new ProviderInputError('scopes', 'must be scope names separated by spaces');
  if (input.kind === 'oidc' && !scopes.includes('openid')) scopes.unshift('openid');
  return {
    applicationId, name: input.name, kind: input.kind, issuer, clientId: input.clientId,
    secretSealed: box.seal(input.clientSecret, providerBinding(applicationId, input.name)), scopes,
  };
}
const loopback = (url: URL) => ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);

/** What of a new provider is not valid, and why (each adapter names the field its own way). */
export class ProviderInputError extends Error {
  constructor(readonly field: 'name' | 'kind' | 'issuer' | 'clientId' | 'clientSecret' | 'scopes', message: string) {
    super(message);
  }
}

/** The application already has a provider of that name, or has none of the name to remove. */
export class ProviderNameError extends Error {}

/** Checks an issuer: https, or http on this machine only (a provider in development). */
function issuerUrl(raw: string, kind: ProviderKind): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ProviderInputError('issuer', 'must be an absolute URL such as https://accounts.google.com');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback(url))) {
    throw new ProviderInputError('issuer', 'must use https (http only for a provider on this machine)');
  }
  if (url.search || url.hash) throw new ProviderInputError('issuer', 'must not have a query or fragment');
  return kind === 'github' ? url.origin : url.toString().replace(/\/+$/, '');
}

/**
 * The identity providers of each application's built-in social login: OpenID Connect providers
 * (found by discovery at their issuer) and GitHub. Client secrets are sealed at rest with
 * SECRET_KEY, bound to the application and the provider name.
 */
export function createProviderService(deps: { db: Storage; box: SecretBox }) {
  const { db, box } = deps;
  return {
    /** The application's providers, read from `from` (the admin API's list passes the lag-tolerant reads). */
    async list(applicationId: number, from: Pick<SocialStore['providers'], 'list'> = db.social.providers): Promise<ProviderView[]> {
      return (await from.list(applicationId)).map(providerView);
    },
    /** The provider with its plain client secret, for talking to it; undefined when unknown. */
    async withSecret(applicationId: number, name: string): Promise<{ provider: StoredProvider; secret: string } | undefined> {
      const provider = PROVIDER_NAME.test(name) ? await db.social.providers.find(applicationId, name) : undefined;
      return provider ? { provider, secret: box.open(provider.secretSealed, providerBinding(applicationId, name)) } : undefined;
    },
  };
}
export type ProviderService = ReturnType<typeof createProviderService>;
