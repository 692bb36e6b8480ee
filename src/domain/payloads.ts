import { MAIL_FIELDS, MAIL_TEMPLATES, mailFieldsOf, type MailPayload, type MailTemplateName } from './mail';
import type { ErasurePayload, OutboxJob, StoredOutboxJob, WebhookJobPayload } from './storage/outbox';
import type { SnapshotPayload } from './storage/versions';

/**
 * The payloads the workers read back from the outbox, one per queue (an email to send, a record's
 * snapshot to keep, a webhook job's event or endpoint, an erasure), read as what they are, member
 * by member, never cast: a row that is not one (written by hand, or cut short) is an error that
 * names what is wrong, and the job fails with it instead of sending or keeping something half made.
 */
export class PayloadError extends Error {}

type Json = Record<string, unknown>;
const objectOf = (raw: unknown, what: string): Json => {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw) as unknown;
    } catch {
      throw new PayloadError(`${what} is not JSON`);
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new PayloadError(`${what} is not a JSON object`);
  return value as Json;
};
const text = (o: Json, key: string, what: string): string => {
  if (typeof o[key] !== 'string') throw new PayloadError(`${what} has no ${key} (a string)`);
  return o[key] as string;
};
const optionalText = (o: Json, key: string, what: string): string | undefined => (o[key] === undefined || o[key] === null ? undefined : text(o, key, what));
const whole = (o: Json, key: string, what: string): number => {
  if (typeof o[key] !== 'number' || !Number.isInteger(o[key])) throw new PayloadError(`${what} has no ${key} (a whole number)`);
  return o[key] as number;
};

/** An outbox mail row's payload, checked. */
export function mailPayloadOf(raw: unknown): MailPayload {
  const what = 'the email\'s outbox row';
  const o = objectOf(raw, what);
  const template = text(o, 'template', what) as MailTemplateName;
  if (!MAIL_TEMPLATES.includes(template)) throw new PayloadError(`${what} names the template ${JSON.stringify(template.slice(0, 40))}, which is none of ours`);
  const brand = o.brand === undefined || o.brand === null ? undefined : objectOf(o.brand, `${what}'s brand`);
  return {
    template, locale: text(o, 'locale', what), to: text(o, 'to', what), appName: text(o, 'appName', what), name: text(o, 'name', what),
    ...(brand && { brand: { color: text(brand, 'color', `${what}'s brand`), ...(optionalText(brand, 'logoUrl', what) !== undefined && { logoUrl: optionalText(brand, 'logoUrl', what) }) } }),
    ...(o.expiresIn !== undefined && o.expiresIn !== null && { expiresIn: whole(o, 'expiresIn', what) }),
    ...mailFieldsOf(Object.fromEntries(MAIL_FIELDS.map((f) => [f, optionalText(o, f, what)]))),
    ...(optionalText(o, 'sealedLink', what) !== undefined && { sealedLink: optionalText(o, 'sealedLink', what) }),
    ...(optionalText(o, 'sealedCode', what) !== undefined && { sealedCode: optionalText(o, 'sealedCode', what) }),
  };
}

/** An outbox snapshot row's payload (a record as a change left it, or its tombstone), checked. */
export function snapshotPayloadOf(raw: unknown): SnapshotPayload {
  const what = 'the snapshot\'s outbox row';
  const o = objectOf(raw, what);
  const snapshot = o.snapshot === null ? null : objectOf(o.snapshot, `${what}'s snapshot`);
  const validFrom = text(o, 'validFrom', what);
  if (Number.isNaN(Date.parse(validFrom))) throw new PayloadError(`${what} has a validFrom that is not a time`);
  return { entityId: whole(o, 'entityId', what), uuid: text(o, 'uuid', what), version: whole(o, 'version', what), validFrom, snapshot };
}

/** The name of an erasure's job on the maintenance queue (docs/lifecycle.md#erase). */
export const ERASE_JOB = 'erase';

export function erasurePayloadOf(raw: unknown): ErasurePayload {
  const what = 'an erasure payload';
  const o = objectOf(raw, what);
  return { entityId: whole(o, 'entityId', what), sealedNeedles: text(o, 'sealedNeedles', what) };
}

/** A webhooks job's payload, checked. */
export function webhookPayloadOf(raw: unknown): WebhookJobPayload {
  const what = 'the webhooks job\'s outbox row';
  const o = objectOf(raw, what);
  const notBefore = optionalText(o, 'notBefore', what);
  if (notBefore !== undefined && Number.isNaN(Date.parse(notBefore))) throw new PayloadError(`${what} has a notBefore that is not a time`);
  const read = { type: optionalText(o, 'type', what), uuid: optionalText(o, 'uuid', what), endpoint: optionalText(o, 'endpoint', what), notBefore, logout: optionalText(o, 'logout', what) };
  return Object.fromEntries(Object.entries(read).filter(([, v]) => v !== undefined));
}

/**
 * A stored job read as its queue's, its payload checked (PayloadError when it is not one);
 * undefined for a queue this release does not know.
 */
export function jobOf(stored: StoredOutboxJob): OutboxJob | undefined {
  switch (stored.queue) {
    case 'mail': return { ...stored, queue: 'mail', payload: mailPayloadOf(stored.payload) };
    case 'versions': return { ...stored, queue: 'versions', payload: snapshotPayloadOf(stored.payload) };
    case 'webhooks': return { ...stored, queue: 'webhooks', payload: webhookPayloadOf(stored.payload) };
    case 'maintenance': return { ...stored, queue: 'maintenance', payload: erasurePayloadOf(stored.payload) };
    default: return undefined;
  }
}
