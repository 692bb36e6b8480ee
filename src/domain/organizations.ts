import { randomBytes } from 'node:crypto';
import type { StoredRole } from './storage/organizations';

/**
 * Organizations (docs/organizations.md): the rules of the model, the same for the API, the CLI,
 * the console and the member pages.
 */

/** The roles every application has. Only an owner gives or takes `owner`; owners and admins manage members. */
export const BUILT_IN_ROLES = ['owner', 'admin', 'member'] as const;
export type BuiltInRole = (typeof BUILT_IN_ROLES)[number];
export const isBuiltIn = (role: string): role is BuiltInRole => (BUILT_IN_ROLES as readonly string[]).includes(role);

/** What a member's roles let it do in its organization. */
export const managesMembers = (roles: readonly string[]): boolean => roles.includes('owner') || roles.includes('admin');
export const isOwner = (roles: readonly string[]): boolean => roles.includes('owner');

/** The most roles a member holds, and permissions a role has. */
export const MAX_ROLES = 20;
export const MAX_PERMISSIONS = 100;
/** The most roles an application defines. */
export const MAX_DEFINED_ROLES = 100;
/** The largest metadata, as JSON. */
export const MAX_METADATA_BYTES = 4096;
/** The most domains an organization claims. */
export const MAX_DOMAINS = 20;

/** Where a limit of the model is set (an application setting) and its value when unset. */
export const ORGANIZATION_LIMITS = {
  /** Members per organization. */
  organization_max_members: 1_000,
  /** Organizations an account belongs to. */
  organization_max_per_account: 100,
  /** Invitations per organization per hour. */
  organization_invitations_per_hour: 100,
  /** Invitations per inviter (an account, a client, an operator) per hour, over every organization. */
  organization_invitations_per_inviter_per_hour: 30,
  /** Days an invitation link lives. */
  organization_invitation_days: 7,
} as const;
export type OrganizationLimit = keyof typeof ORGANIZATION_LIMITS;

/** The ranges each limit accepts (lowest, highest). */
export const LIMIT_RANGES: Record<OrganizationLimit, [number, number]> = {
  organization_max_members: [1, 1_000_000],
  organization_max_per_account: [1, 10_000],
  organization_invitations_per_hour: [1, 100_000],
  organization_invitations_per_inviter_per_hour: [1, 100_000],
  organization_invitation_days: [1, 30],
};

/** The limit's value for an application: its setting when set (settingProblem checked it), else the default. */
export function limitOf(settings: Record<string, string>, key: OrganizationLimit): number {
  const raw = settings[key];
  return raw !== undefined && /^\d{1,9}$/.test(raw) ? Number(raw) : ORGANIZATION_LIMITS[key];
}

/** Why `value` is no value of the limit `key`, if it is not. */
export function limitProblem(key: OrganizationLimit, value: string): string | undefined {
  const [low, high] = LIMIT_RANGES[key];
  return /^\d{1,9}$/.test(value) && Number(value) >= low && Number(value) <= high ? undefined
    : `must be a whole number from ${low} to ${high} (${ORGANIZATION_LIMITS[key]} when unset)`;
}

export const newOrganizationId = (): string => `org_${randomBytes(12).toString('hex')}`;
export const newInvitationId = (): string => `inv_${randomBytes(12).toString('hex')}`;
/** An invitation link's secret: a bearer value, shown in the email and stored as its SHA-256 only. */
export const newInvitationSecret = (): string => randomBytes(32).toString('base64url');
export const INVITATION_SECRET = /^[A-Za-z0-9_-]{43}$/;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export function nameProblem(name: string): string | undefined {
  if (name.trim() === '') return 'is empty: give the organization\'s name, such as Acme Corporation';
  if (name.length > 200) return 'is longer than 200 characters';
  if (CONTROL.test(name)) return 'holds a control character';
  return undefined;
}

export const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;
export const slugProblem = (slug: string): string | undefined => (SLUG.test(slug) ? undefined
  : 'must be 1 to 64 lower-case letters, digits and hyphens, not starting or ending with a hyphen, such as acme-corp');

export function logoUrlProblem(url: string): string | undefined {
  if (url.length > 2048) return 'is longer than 2048 characters';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not an address: give an https:// address of an image';
  }
  if (parsed.protocol !== 'https:') return 'must be an https:// address';
  if (parsed.username || parsed.password) return 'must not hold a user name or password';
  return undefined;
}

/** `raw` as metadata (a JSON object of at most MAX_METADATA_BYTES), or why it is not. */
export function parseMetadata(raw: string): { metadata: Record<string, unknown> } | { problem: string } {
  if (Buffer.byteLength(raw, 'utf8') > MAX_METADATA_BYTES) return { problem: `is larger than ${MAX_METADATA_BYTES} bytes of JSON` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { problem: 'is not JSON: send a JSON object, such as {"plan":"enterprise"}' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { problem: 'must be a JSON object, such as {"plan":"enterprise"}' };
  return { metadata: parsed as Record<string, unknown> };
}

export const ROLE_NAME = /^[a-z][a-z0-9_.:-]{0,63}$/;
export const roleNameProblem = (name: string): string | undefined => (ROLE_NAME.test(name) ? undefined
  : 'must be 1 to 64 lower-case letters, digits and _ . : - starting with a letter, such as billing_manager');

export const PERMISSION = /^[a-z][a-z0-9_.:/-]{0,127}$/;
export const permissionProblem = (p: string): string | undefined => (PERMISSION.test(p) ? undefined
  : `"${p.slice(0, 64)}" is not a permission: 1 to 128 lower-case letters, digits and _ . : / - starting with a letter, such as read:invoices`);

export const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/;
export const domainProblem = (domain: string): string | undefined => (DOMAIN.test(domain) ? undefined
  : 'must be a domain name in lower case with at least one dot, such as acme.com');

/**
 * Mail providers whose addresses anyone can get (webmail, ISPs' mail, privacy relays): their users
 * are strangers to each other, so a claim of one never lets accounts join an organization by it.
 */
const SHARED_MAIL_DOMAINS = new Set([
  'gmail.com', 'googlemail.com', 'outlook.com', 'hotmail.com', 'hotmail.co.uk', 'hotmail.fr', 'hotmail.de', 'hotmail.es', 'hotmail.it', 'live.com', 'live.fr',
  'live.co.uk', 'msn.com', 'yahoo.com', 'yahoo.co.uk', 'yahoo.fr', 'yahoo.de', 'yahoo.es', 'yahoo.it', 'yahoo.co.jp', 'yahoo.com.br', 'ymail.com', 'rocketmail.com',
  'aol.com', 'icloud.com', 'me.com', 'mac.com', 'privaterelay.appleid.com', 'proton.me', 'protonmail.com', 'protonmail.ch', 'pm.me', 'tutanota.com', 'tuta.io',
  'gmx.com', 'gmx.de', 'gmx.net', 'gmx.at', 'gmx.ch', 'web.de', 'mail.com', 'email.com', 'zoho.com', 'zohomail.com', 'fastmail.com', 'fastmail.fm', 'hey.com',
  'yandex.com', 'yandex.ru', 'ya.ru', 'mail.ru', 'bk.ru', 'inbox.ru', 'list.ru', 'rambler.ru', 'qq.com', '163.com', '126.com', 'yeah.net', 'sina.com', 'naver.com',
  'daum.net', 'hanmail.net', 'orange.fr', 'wanadoo.fr', 'free.fr', 'sfr.fr', 'laposte.net', 't-online.de', 'freenet.de', 'libero.it', 'virgilio.it', 'tiscali.it',
  'btinternet.com', 'sky.com', 'comcast.net', 'verizon.net', 'att.net', 'sbcglobal.net', 'cox.net', 'charter.net', 'bellsouth.net', 'rediffmail.com',
  'seznam.cz', 'wp.pl', 'o2.pl', 'interia.pl', 'onet.pl', 'duck.com', 'mailbox.org', 'posteo.de', 'hushmail.com', 'inbox.com', 'lycos.com', 'mail.ch',
]);

/** Why accounts may never join by `domain` (a mail provider anyone can use), or undefined when the application may let them. */
export const joinableProblem = (domain: string): string | undefined => (SHARED_MAIL_DOMAINS.has(domain)
  ? `is a mail provider anyone can have an address at: its users are strangers to each other, so accounts never join an organization by it (claim it, or invite its people, instead)`
  : undefined);

/** The domain of an email address, in lower case. */
export const domainOf = (email: string): string => email.slice(email.lastIndexOf('@') + 1).toLowerCase();

/** The roles known to an application: the built-in ones and those it defined, with their permissions. */
export function knownRoles(defined: readonly StoredRole[]): Map<string, string[]> {
  const known = new Map<string, string[]>(BUILT_IN_ROLES.map((r) => [r, []]));
  for (const role of defined) known.set(role.name, role.permissions);
  return known;
}
