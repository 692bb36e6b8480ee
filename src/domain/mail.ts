import type { Application } from './storage/applications';
import { brandOf } from './brand';
import type { SecretBox } from './secrets';

/** The emails Gatehouse sends, one template folder each under templates/. */
export const MAIL_TEMPLATES = [
  'reset-password', 'verify-email', 'welcome', 'email-changed', 'email-changed-notice', 'second-factor-on', 'second-factor-off', 'passkey-added', 'passkey-removed',
  'signed-out-everywhere', 'second-factor-reset', 'webhook-disabled', 'organization-invitation', 'email-code', 'operator-invitation',
] as const;
export type MailTemplateName = (typeof MAIL_TEMPLATES)[number];

/**
 * What some emails say besides the greeting, named once: each is a string, carried from the change
 * that sends the email through its outbox row to its template (the request, the payload, the
 * worker's check of the row and the render's values read this list).
 */
export const MAIL_FIELDS = [
  // the address that replaced the recipient's (email-changed only)
  'newEmail',
  // the person's name of the passkey the email is about (passkey-added, passkey-removed)
  'passkeyName',
  // the webhook endpoint the email is about: its URL (webhook-disabled)
  'endpointUrl',
  // the organization an invitation is to, and who invited (organization-invitation)
  'organizationName',
  'inviterName',
] as const;
export type MailField = (typeof MAIL_FIELDS)[number];
/** The fields of MAIL_FIELDS an email says, each a string or absent. */
export type MailFields = { [F in MailField]?: string };

/** The fields of MAIL_FIELDS that `from` holds. */
export const mailFieldsOf = (from: MailFields): MailFields =>
  Object.fromEntries(MAIL_FIELDS.filter((f) => from[f] !== undefined).map((f) => [f, from[f]])) as MailFields;

/** What an outbox mail row holds until it is sent (then only template, locale and recipient stay). */
export interface MailPayload extends MailFields {
  template: MailTemplateName;
  locale: string;
  to: string;
  appName: string;
  /** The application's accent colour and logo when the email was queued (older rows have none). */
  brand?: { color: string; logoUrl?: string };
  name: string;
  /** Seconds the link lives, shown in the message's language. */
  expiresIn?: number;
  /** The link carries a one-time code: it is sealed with SECRET_KEY, bound to the outbox id. An email without a link has none. */
  sealedLink?: string;
  /** A sign-in code to type (email-code), sealed as the link is. */
  sealedCode?: string;
}

/** How an email greets the person a record is: its display name, else given name, else the address's local part. */
export const displayName = (r: { attributes: Record<string, unknown>; email: string | null }) =>
  String(r.attributes.displayName ?? r.attributes.givenName ?? (r.email ?? '').split('@')[0]);

/** Appends `name=value` to a configured URL, whether or not it already has a query. */
export function withParameter(url: string, name: string, value: string): string {
  const u = new URL(url);
  u.searchParams.set(name, value);
  return u.toString();
}

/** One email a change sends: to whom, in which template and language, with which link (its one-time code in clear: sealed before it is stored). */
export interface MailRequest extends MailFields {
  app: Application;
  template: MailTemplateName;
  locale: string;
  to: string;
  name: string;
  link?: string;
  expiresIn?: number;
  /** A one-time code the message shows (email-code): sealed before it is stored, as the link is. */
  code?: string;
}

/**
 * The payload of the outbox row `jobId` that sends `mail`. The code in the link exists in clear only
 * in the request, in the sealed payload (bound to the row), and in the message itself; the database
 * keeps its SHA-256 elsewhere.
 */
export function mailPayload(mail: MailRequest, jobId: string, box: SecretBox): MailPayload {
  const brand = brandOf(mail.app);
  return {
    template: mail.template,
    locale: mail.locale,
    to: mail.to,
    appName: brand.name,
    brand: { color: brand.color, ...(brand.logoUrl && { logoUrl: brand.logoUrl }) },
    name: mail.name,
    expiresIn: mail.expiresIn,
    ...mailFieldsOf(mail),
    ...(mail.link !== undefined && { sealedLink: box.seal(mail.link, jobId) }),
    ...(mail.code !== undefined && { sealedCode: box.seal(mail.code, jobId) }),
  };
}

/** `text` with every email address in it replaced by `<address>` (for failure reasons that are stored and shown). */
export const withoutAddresses = (text: string): string => text.replace(/<?[^\s<>()[\]"',;:@]+@[^\s<>()[\]"',;:@]+>?/g, '<address>');
