import { BlockList, isIP } from 'node:net';
import { randomBytes } from 'node:crypto';
import { accountOf, clientOf, type EventType, type KeptEvent } from './events';

/**
 * Webhooks (docs/webhooks.md): what an application's endpoints may subscribe to, and what a URL
 * must be. Every event type of the event union is named here, as the webhook type it is delivered
 * as or `null` (not delivered): a new event type does not compile until it is decided, so the list
 * cannot drift from the events.
 */
export const WEBHOOK_TYPE_OF: Readonly<Record<EventType, string | null>> = {
  'account.registered': null, // (its record.created is the user.created)
  'account.signed_in': 'user.signed_in',
  'account.password_changed': 'user.password_changed',
  'account.email_verified': 'user.email_verified',
  'account.email_changed': null, // (its record.updated names the email)
  'account.email_change_undone': null,
  'account.verification_requested': null,
  'account.password_reset_requested': null,
  'account.email_code_requested': null,
  'account.identity_linked': 'user.identity_linked',
  'account.identity_unlinked': 'user.identity_unlinked',
  'account.disabled': 'user.disabled',
  'account.enabled': 'user.enabled',
  'account.erased': 'user.erased',
  'account.exported': null,
  'account.signed_out': 'user.sessions_ended',
  'account.second_factor_added': 'user.factor_added',
  'account.second_factor_removed': 'user.factor_removed',
  'account.passkey_added': 'user.factor_added',
  'account.passkey_renamed': null,
  'account.passkey_removed': 'user.factor_removed',
  'account.recovery_codes_renewed': null,
  'access.issued': null,
  'record.created': 'user.created',
  'record.updated': 'user.updated',
  'record.replaced': 'user.updated',
  'record.deleted': 'user.deleted',
  'client.created': 'client.created',
  'client.changed': 'client.changed',
  'client.secret_reset': 'client.secret_reset',
  'client.deleted': 'client.deleted',
  'setting.changed': 'settings.changed',
  'provider.added': null,
  'provider.removed': null,
  'application.created': null,
  'flow.imported': null,
  'attribute.indexed': null,
  'attribute.unindexed': null,
  'keys.rotated': null,
  'token.refreshed': null,
  'token.reuse_detected': 'user.refresh_reuse_detected',
  'account.activity_disowned': 'user.sessions_ended',
  'oidc.grant_given': null,
  'oidc.consent_refused': null,
  'oidc.code_redeemed': null,
  'oidc.device_code_redeemed': null,
  'oidc.token_refreshed': null,
  'oidc.grant_revoked': null,
  'oidc.logout': null,
  'oidc.backchannel_logout': null,
  'oidc.client_credentials_issued': null,
  'webhook.added': null,
  'webhook.removed': null,
  'webhook.secret_rotated': null,
  'webhook.disabled': null,
  'webhook.enabled': null,
  'webhook.tested': null, // (the ping it queues goes to its endpoint alone)
  'webhook.redelivered': null,
  'organization.created': 'organization.created',
  'organization.updated': 'organization.updated',
  'organization.deleted': 'organization.deleted',
  'organization.member_added': 'organization.member_added',
  'organization.member_removed': 'organization.member_removed',
  'organization.member_roles_changed': 'organization.member_roles_changed',
  'organization.switched': null,
  'organization.invitation_created': 'organization.invitation_created',
  'organization.invitation_revoked': 'organization.invitation_revoked',
  'organization.role_defined': 'organization.role_defined',
  'organization.role_removed': 'organization.role_removed',
  'organization.domain_added': 'organization.domain_added',
  'organization.domain_verified': 'organization.domain_verified',
  'organization.domain_removed': 'organization.domain_removed',
  'organization.connection_added': null,
  'organization.connection_updated': null,
  'organization.connection_removed': null,
  'saml.service_provider_added': null,
  'saml.service_provider_updated': null,
  'saml.service_provider_removed': null,
  'saml.assertion_issued': null,
  'saml.logout': null,
  'api.added': null,
  'api.updated': null,
  'api.removed': null,
  'api.client_scopes_granted': null,
  'role.defined': null,
  'role.removed': null,
  'account.roles_changed': null,
  'organization.domain_joinable': 'organization.domain_joinable',
  'records.imported': null, // (each record's user.created says it)
  'scim.token_created': null,
  'scim.token_revoked': null,
  'scim.configured': null,
  'scim.user_provisioned': 'scim.user_provisioned',
  'scim.user_updated': 'scim.user_updated',
  'scim.user_deactivated': 'scim.user_deactivated',
  'scim.user_reactivated': 'scim.user_reactivated',
  'scim.user_deprovisioned': 'scim.user_deprovisioned',
  'scim.group_created': 'scim.group_created',
  'scim.group_updated': 'scim.group_updated',
  'scim.group_deleted': 'scim.group_deleted',
};

/** The webhooks queue's jobs (docs/webhooks.md#deliveries). */
export const WEBHOOK_JOBS = {
  /** One event to the endpoints subscribed to it: its deliveries made, then sent. */
  fanOut: 'fan-out',
  /** A new endpoint's first seconds read back from the event store (pods learn of it within REFRESH_MS). */
  catchUp: 'catch-up',
  /** What is due sent: scheduled, and queued for one endpoint when its deliveries are queued again. */
  deliver: 'deliver',
  /** One logout token to a client's back-channel logout address (docs/openid-connect.md#back-channel-logout), the job's attempts its retries. */
  logout: 'backchannel-logout',
} as const;

/** How long a delivery is tried for, from when it is made or sent again, before it is given up (at least a day). */
export const RETRY_FOR_MS = 26 * 3600_000;

/** How often the recurring `deliver` job sends what is due (the retries, and what Redis lost). */
export const DELIVER_EVERY_MS = 5_000;

/** How often a process reads which applications have endpoints, and for what. */
export const REFRESH_MS = 2_000;
/** When a new endpoint's first seconds are read back from the event store: once every process knows of it. */
export const CATCH_UP_AFTER_MS = 3 * REFRESH_MS + 2_000;

/** Past this without a successful read, every event is taken as wanted (a fan-out that finds no endpoint costs little). */
export const STALE_AFTER_MS = 3 * REFRESH_MS;

/** Every type an endpoint may subscribe to, sorted, and `ping` (what /webhooks/test sends). */
export const WEBHOOK_TYPES: readonly string[] = [...new Set(Object.values(WEBHOOK_TYPE_OF).filter((t): t is string => t !== null)), 'ping'].sort();

/** An endpoint's subscription: every type (`*`), or these. */
export type Subscription = '*' | readonly string[];

/** What is wrong with a list of types, or undefined: known types, or `*` alone. */
export function subscriptionProblem(types: readonly string[]): string | undefined {
  if (types.length === 0) return 'name at least one event type, or * for every one';
  if (types.includes('*')) return types.length === 1 ? undefined : '* means every type: send it alone';
  const unknown = types.filter((t) => !WEBHOOK_TYPES.includes(t));
  return unknown.length > 0 ? `unknown event type ${unknown.slice(0, 5).map((t) => JSON.stringify(t.slice(0, 64))).join(', ')}; known types are ${WEBHOOK_TYPES.join(', ')}` : undefined;
}

/** Whether an endpoint subscribed to `types` gets an event of webhook type `type`. */
export const subscribes = (types: Subscription, type: string): boolean => types === '*' || types.includes(type);

/** The message id of an event's deliveries (the `webhook-id` header): the same for every endpoint and every attempt. */
export const messageIdOf = (eventId: string): string => `msg_${eventId.replace(/-/g, '')}`;

/** What a receiver gets: Standard Webhooks' `{type, timestamp, data}`. */
export interface WebhookBody { type: string; timestamp: string; data: Record<string, unknown> }

/**
 * The body of an event's deliveries (docs/webhooks.md#events): its webhook type, when it happened,
 * and its data — the account's public id (`user_id`), who acted (`actor`), the client it came
 * through, and the event's own names (changed attributes, method, provider…). Never a value of the
 * record, a password, hash, token, code or secret: events hold none (the record is added at
 * delivery for an endpoint that asked for it).
 */
export function webhookBody(e: KeptEvent, type: string, userId: string | undefined): WebhookBody {
  const own: Record<string, unknown> = { ...(e.data as Record<string, unknown>) };
  if (e.type === 'account.passkey_added' || e.type === 'account.passkey_removed') own.method = 'passkey';
  if (e.type === 'account.signed_out') own.reason = 'signed_out';
  if (e.type === 'account.activity_disowned') own.reason = 'disowned';
  if (e.type.startsWith('client.')) own.client_id = e.subject.id;
  const client = clientOf(e);
  return {
    type,
    timestamp: e.occurredAt.toISOString(),
    data: {
      ...(accountOf(e) !== undefined && { user_id: userId ?? null }),
      actor: e.actor.kind,
      ...(client !== undefined && { client_id: client }),
      ...own,
    },
  };
}

/** A new endpoint secret, as Standard Webhooks writes them: `whsec_` and 24 random bytes in base64. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

/** An endpoint's public id. */
export const newEndpointId = (): string => `ep_${randomBytes(12).toString('hex')}`;

/**
 * Addresses a webhook never connects to unless the operator allows private targets
 * (WEBHOOKS_ALLOW_PRIVATE): this machine, private networks, link-local (cloud metadata at
 * 169.254.169.254), shared address space, multicast and reserved ranges, in IPv4 and IPv6
 * (IPv4-mapped IPv6 addresses are judged as their IPv4 address, however written; the other IPv6
 * forms that carry an IPv4 address are refused: IPv4-compatible, IPv4-translated, NAT64, 6to4, and
 * the IETF's protocol assignments, Teredo among them), with the deprecated site-local range and the
 * discard prefix.
 */
const PRIVATE = (() => {
  const list = new BlockList();
  for (const [net, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24],
    ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) list.addSubnet(net, bits, 'ipv4');
  // (and the IPv6 forms that carry an IPv4 address: IPv4-compatible, NAT64 well-known and local-use, 6to4)
  for (const [net, bits] of [['::', 96], ['::1', 128], ['::ffff:0:0:0', 96], ['100::', 64], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
    ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['2001::', 23], ['2001:db8::', 32], ['2002::', 16]] as const) list.addSubnet(net, bits, 'ipv6');
  return list;
})();

/** The IPv4 address an IPv4-mapped IPv6 address carries (`::ffff:127.0.0.1`, or as a URL writes it, `::ffff:7f00:1`), if it is one. */
function mappedIpv4(address: string): string | undefined {
  const dotted = /^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return dotted[1];
  const hex = /^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const [high, low] = [parseInt(hex[1], 16), parseInt(hex[2], 16)];
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** Whether `address` (an IP address) is one a webhook must not reach by default. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 6) {
    const mapped = mappedIpv4(address);
    if (mapped) return PRIVATE.check(mapped, 'ipv4');
    return PRIVATE.check(address, 'ipv6');
  }
  return PRIVATE.check(address, 'ipv4');
}

/** The longest endpoint URL. */
export const MAX_WEBHOOK_URL = 2048;

/**
 * What is wrong with an endpoint's URL, or undefined: an absolute `https` URL (or `http` where
 * private targets are allowed), without credentials or fragment, whose host, when it is an IP
 * address, is not a private one. A name is resolved and judged again at every delivery, on the
 * address actually connected to.
 */
export function webhookUrlProblem(text: string, allowPrivate: boolean): string | undefined {
  if (text.length > MAX_WEBHOOK_URL) return `is longer than ${MAX_WEBHOOK_URL} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not an absolute URL (https://…)';
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) return 'must be https (http only where WEBHOOKS_ALLOW_PRIVATE=true)';
  if (url.username || url.password) return 'must not hold a user name or password: the signature authenticates each delivery';
  if (url.hash) return 'must not have a fragment';
  // a name's trailing dot (the root: `localhost.`) names the same host
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');
  if (!allowPrivate && (isIP(host) !== 0 ? isPrivateAddress(host) : host === '' || host === 'localhost' || host.endsWith('.localhost'))) {
    return 'names a loopback, private, link-local or metadata address, which webhooks do not reach (WEBHOOKS_ALLOW_PRIVATE=true allows them)';
  }
  return undefined;
}
