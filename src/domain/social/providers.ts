import type { Storage } from '../storage';
import type { SocialStore, StoredProvider } from '../storage/social';
import { errors } from '../../errors';
import type { Clock } from '../clients';
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

const bound = (applicationId: number, name: string) => `provider:${applicationId}:${name}`;
const loopback = (url: URL) => ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);

/** Checks an issuer: https, or http on this machine only (a provider in development). */
function issuerUrl(raw: string, kind: ProviderKind): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw errors.invalidArgument('issuer', 'must be an absolute URL such as https://accounts.google.com');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback(url))) {
    throw errors.invalidArgument('issuer', 'must use https (http only for a provider on this machine)');
  }
  if (url.search || url.hash) throw errors.invalidArgument('issuer', 'must not have a query or fragment');
  return kind === 'github' ? url.origin : url.toString().replace(/\/+$/, '');
}

/**
 * The identity providers of each application's built-in social login: OpenID Connect providers
 * (found by discovery at their issuer) and GitHub. Client secrets are sealed at rest with
 * SECRET_KEY, bound to the application and the provider name.
 */
export function createProviderService(deps: { db: Storage; box: SecretBox; clock: Clock }) {
  const { db, box, clock } = deps;
  const view = ({ secretSealed: _s, applicationId: _a, id: _i, ...rest }: StoredProvider): ProviderView => rest;
  return {
    async add(applicationId: number, input: NewProvider): Promise<ProviderView> {
      if (!PROVIDER_NAME.test(input.name)) throw errors.invalidArgument('name', 'must be a lowercase label of letters, digits and -, such as google');
      if (!PROVIDER_KINDS.includes(input.kind)) throw errors.invalidArgument('kind', `must be one of ${PROVIDER_KINDS.join(', ')}`);
      const issuer = issuerUrl(input.issuer, input.kind);
      if (!input.clientId || input.clientId.length > 255) throw errors.invalidArgument('client_id', 'must be the client id the provider gave this application');
      if (!input.clientSecret || input.clientSecret.length > 512) throw errors.invalidArgument('client_secret', 'must be the client secret the provider gave this application');
      const scopes = input.scopes?.length ? input.scopes : input.kind === 'github' ? ['read:user', 'user:email'] : ['openid', 'email', 'profile'];
      if (scopes.some((s) => !/^[\x21\x23-\x5B\x5D-\x7E]{1,64}$/.test(s))) throw errors.invalidArgument('scopes', 'must be scope names separated by spaces');
      if (input.kind === 'oidc' && !scopes.includes('openid')) scopes.unshift('openid');
      const stored = {
        applicationId, name: input.name, kind: input.kind, issuer, clientId: input.clientId,
        secretSealed: box.seal(input.clientSecret, bound(applicationId, input.name)), scopes,
      };
      if (!(await db.social.providers.insert(stored, clock.now()))) {
        throw errors.invalidArgument('name', `the application already has a provider named ${input.name}; remove it first`);
      }
      return view({ ...stored, id: 0 });
    },
    /** The application's providers, read from `from` (the admin API's list passes the lag-tolerant reads). */
    async list(applicationId: number, from: Pick<SocialStore['providers'], 'list'> = db.social.providers): Promise<ProviderView[]> {
      return (await from.list(applicationId)).map(view);
    },
    async remove(applicationId: number, name: string): Promise<void> {
      if (!(await db.social.providers.remove(applicationId, name))) throw errors.invalidArgument('name', `no provider named ${name.slice(0, 64)} in this application`);
    },
    /** The provider with its plain client secret, for talking to it; undefined when unknown. */
    async withSecret(applicationId: number, name: string): Promise<{ provider: StoredProvider; secret: string } | undefined> {
      const provider = PROVIDER_NAME.test(name) ? await db.social.providers.find(applicationId, name) : undefined;
      return provider ? { provider, secret: box.open(provider.secretSealed, bound(applicationId, name)) } : undefined;
    },
  };
}
export type ProviderService = ReturnType<typeof createProviderService>;
