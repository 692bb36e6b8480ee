import type { BaseUrls } from '../domain/base-urls';
import type { ProviderService } from '../domain/social/providers';
import type { RelyingParty } from '../domain/social/relying-party';
import type { SocialTokens } from '../domain/social/tokens';
import type { Application } from '../domain/storage/applications';
import type { ClientService, Clock } from '../domain/clients';
import type { Logger } from '../logger';
import type { FlowService } from '../domain/flows';
import type { PasswordHasher } from '../domain/passwords';
import type { SecretBox } from '../domain/secrets';
import type { Limit, RateLimiter } from '../domain/rate-limit';
import type { RecordVersions } from '../domain/versions';
import type { Issuer } from '../domain/tokens';
import type { Acting, Origin } from '../domain/events';
import type { Storage } from '../domain/storage';
import type { Work } from '../domain/ports';
import type { JoinableDomains } from './organizations/joinable';

/** What every use case may use; built once at start and handed in (no globals). */
export interface Services {
  /** Storage, by its contract (src/domain/storage): never the engine beneath it. */
  db: Storage;
  clients: ClientService;
  /** Issues codes and tokens (their rows and values); the grants that spend them are use cases (src/usecases/tokens). */
  tokens: Issuer;
  passwords: PasswordHasher;
  flows: FlowService;
  rateLimiter: RateLimiter;
  /** Social login: tokens and their profiles (built-in or external application), providers, the relying party. */
  socialTokens: SocialTokens;
  providers: ProviderService;
  relyingParty: RelyingParty;
  loginLimits: { account: Limit; address: Limit };
  mailLimits: { recipient: Limit; address: Limit };
  /** Registrations per client address. */
  registrationLimit: Limit;
  /** Calls of an organization's directory per SCIM token. */
  scimLimit: Limit;
  /** The time the database may spend on one statement of entity.find or entity.count. */
  entityQueryTimeoutMs: number;
  /** Webhooks (docs/webhooks.md): whether endpoints may be private addresses (WEBHOOKS_ALLOW_PRIVATE). */
  webhooks: { allowPrivate: boolean };
  /** Organizations (docs/organizations.md#domains): the domains accounts join organizations by, as this process last read them. */
  joinableDomains: JoinableDomains;
  /** Seals values that must be stored reversibly (client secrets, links in pending emails). */
  box: SecretBox;
  /** The unit of work every change runs in: one transaction, its events, then the outbox (src/usecases/unit-of-work.ts). */
  work: Work;
  /** Version snapshots: the job of every record change, and lookups of a record at a time. */
  versions: RecordVersions;
  clock: Clock;
  logger: Logger;
  /** Each application's own base URL, where its emails link (docs/api-guide.md: Password reset and email verification). */
  baseUrls: BaseUrls;
}

/**
 * One call of a use case: the application, where the call came from, the services; never what was
 * sent or how it was authenticated. A use case names the services it uses (`K`), never the whole
 * bag where it uses less (the architecture test holds it); an adapter hands it all of them.
 */
export interface CallContext<K extends keyof Services = keyof Services> {
  /** Where the call came from, for its events: the request id and the peer's address. */
  origin: Origin;
  app: Application;
  /** What the per-address budgets count the client as (honours TRUST_PROXY and X-End-User-IP): one key per IPv4 address or IPv6 /64 (src/domain/addresses.ts). */
  clientAddress: string;
  services: Pick<Services, K>;
}

/** The person a record is, acting through `client` in this call (a sign-in, a profile edit with their own token). */
export const asAccount = (ctx: Pick<CallContext, 'origin'>, entityId: number, client?: { clientId: string }): Acting =>
  ({ actor: { kind: 'account', accountId: entityId, ...(client && { clientId: client.clientId }) }, origin: ctx.origin });

/** A client acting for the application in this call (an owner or another client with its secret). */
export const asClient = (ctx: Pick<CallContext, 'origin'>, client: { clientId: string }): Acting =>
  ({ actor: { kind: 'client', clientId: client.clientId }, origin: ctx.origin });
