import { randomUUID } from 'node:crypto';
import type { Disabled, UserRecord, NewRecord } from './storage/records';
import type { StoredProfile } from './storage/social';
import { invalidField } from './refusal';
import { MAX_PASSWORD_LENGTH } from './passwords';
import { HashFormatError, importedHash, type ImportedHash } from './imported-hashes';
import { COMMON_PASSWORD_REFUSAL, isCommonPassword } from './common-passwords';
import { formatTimestamp, parseTimestamp } from './timestamps';

/** The one entity type (docs/api.md#records); `type_name` must name it. */
export const USER_TYPE = 'user';

/** Attributes with a unique constraint: what `key_attribute` may name. */
export const UNIQUE_ATTRIBUTES = ['email', 'username', 'uuid', 'id'] as const;
export type UniqueAttribute = (typeof UNIQUE_ATTRIBUTES)[number];

/** Time attributes every record has; an application declares more in its `time_attributes` setting. */
export const TIME_ATTRIBUTES = ['emailVerified', 'lastLogin'] as const;

/** Attributes the service sets: never written by a client. */
export const READ_ONLY = new Set(['id', 'uuid', 'created', 'lastUpdated', 'profiles', 'lastLogin']);
const STANDARD = ['displayName', 'givenName', 'familyName', 'birthdate'] as const;
const ATTRIBUTE_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const EMAIL = /^[^\s@"<>()[\]\\,;:]+@[^\s@"<>()[\]\\,;:]+\.[^\s@"<>()[\]\\,;:]+$/;
const MAX_ATTRIBUTES_JSON = 64 * 1024;
/**
 * Levels of objects and lists an attribute's value may have (`{"a":{"b":1}}` is 2 for `a`): a
 * record is a profile, not a document store, and deeper values defeat the databases' JSON path
 * functions (SQLite refuses them, MariaDB reads them as null).
 */
export const MAX_ATTRIBUTE_DEPTH = 16;

/** The path of the first place in `value` deeper than MAX_ATTRIBUTE_DEPTH levels, or undefined. Iterative: any depth is safe to check. */
function tooDeep(name: string, value: unknown): string | undefined {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path: name, depth: 1 }];
  while (stack.length > 0) {
    const at = stack.pop()!;
    if (typeof at.value !== 'object' || at.value === null) continue;
    if (at.depth > MAX_ATTRIBUTE_DEPTH) return at.path;
    for (const [key, inner] of Object.entries(at.value)) {
      stack.push({ value: inner, path: Array.isArray(at.value) ? `${at.path}[${key}]` : `${at.path}.${key}`, depth: at.depth + 1 });
    }
  }
  return undefined;
}

export function requireUserType(typeName: string): void {
  if (typeName !== USER_TYPE) throw invalidField('typeName', `unknown entity type "${typeName.slice(0, 64)}"; the entity type is "${USER_TYPE}"`);
}

/**
 * A time attribute of the record schema a verification code may set: the built-in ones, and those
 * the application's `time_attributes` setting names (comma-separated, such as
 * `termsAccepted, phoneVerified`).
 */
export function requireTimeAttribute(name: string, declared = ''): void {
  const known = [...TIME_ATTRIBUTES, ...declared.split(',').map((n) => n.trim()).filter((n) => ATTRIBUTE_NAME.test(n) && !READ_ONLY.has(n))];
  if (!known.includes(name)) {
    throw invalidField('attributeName', `"${name.slice(0, 64)}" is not a time attribute of ${USER_TYPE}; use one of ${known.join(', ')} (more can be declared in the application setting time_attributes)`);
  }
}

export function isValidEmail(value: string): boolean {
  return value.length <= 254 && EMAIL.test(value);
}

/** A record's attributes as a client writes them, checked: columns apart, the password in clear. */
export interface UserDocument {
  email: string | null;
  username: string | null;
  emailVerified: Date | null;
  /** To be hashed; never stored in clear. */
  password?: string;
  /** A hash from another system, kept as it is (docs/import.md). */
  hashed?: ImportedHash;
  attributes: Record<string, unknown>;
}

/**
 * Checks a record's attributes as a client writes them (entity.create, bulkCreate, update,
 * replace): email, username, password and emailVerified shapes, attribute names, size, and none
 * of the attributes the service sets.
 */
export function checkUserDocument(raw: unknown): UserDocument {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw invalidField('attributes', 'must be a JSON object such as {"email":"ada@example.com"}');
  }
  const bad = (name: string, why: string) => invalidField(`attributes.${name}`, why);
  // before anything recursive (JSON.stringify) walks the value
  for (const [name, value] of Object.entries(raw)) {
    const deep = tooDeep(name, value);
    if (deep !== undefined) {
      throw bad(name.slice(0, 64), `nests objects and lists more than ${MAX_ATTRIBUTE_DEPTH} levels deep (at ${deep.slice(0, 200)}); keep a record's attributes shallower`);
    }
  }
  if (JSON.stringify(raw).length > MAX_ATTRIBUTES_JSON) throw invalidField('attributes', `is larger than ${MAX_ATTRIBUTES_JSON} bytes`);
  const { email = null, username = null, password, emailVerified = null, ...rest } = raw as Record<string, unknown>;

  if (email !== null && (typeof email !== 'string' || !isValidEmail(email))) throw bad('email', 'must be an email address such as ada@example.com, or null');
  if (username !== null && (typeof username !== 'string' || username.length < 1 || username.length > 191)) throw bad('username', 'must be a string of 1 to 191 characters, or null');
  // a password brought with its hash from another system (docs/import.md): kept as it is encoded
  let hashed: ImportedHash | undefined;
  if (password !== undefined && typeof password === 'object' && password !== null && !Array.isArray(password)) {
    try {
      hashed = importedHash(password);
    } catch (e) {
      if (e instanceof HashFormatError) throw bad('password', e.message);
      throw e;
    }
  } else if (password !== undefined && (typeof password !== 'string' || password.length < 1 || password.length > MAX_PASSWORD_LENGTH)) {
    throw bad('password', `must be a string of 1 to ${MAX_PASSWORD_LENGTH} characters, or {"hashed": …} (a hash from another system)`);
  }
  if (typeof password === 'string' && isCommonPassword(password)) throw bad('password', COMMON_PASSWORD_REFUSAL);
  let verified: Date | null = null;
  if (emailVerified !== null) {
    verified = typeof emailVerified === 'string' ? parseTimestamp(emailVerified) ?? null : null;
    if (!verified) throw bad('emailVerified', 'must be a timestamp such as 2026-01-31 12:00:00.000000 +0000, or null');
  }
  for (const [name, value] of Object.entries(rest)) {
    if (READ_ONLY.has(name)) throw bad(name, 'is set by the service and cannot be written');
    if (!ATTRIBUTE_NAME.test(name)) throw bad(name.slice(0, 64), 'attribute names are letters, digits and _, starting with a letter');
    if (typeof value === 'function') throw bad(name, 'has an unsupported value');
  }
  return {
    email: email as string | null, username: username as string | null, emailVerified: verified,
    password: typeof password === 'string' ? password : undefined, hashed, attributes: rest,
  };
}

/** Checks the `attributes` of a new record: the record without its password hash, and the password to hash. */
export function parseNewUser(applicationId: number, raw: unknown): { entity: Omit<NewRecord, 'passwordHash'>; password?: string; hashed?: ImportedHash } {
  const { password, hashed, ...doc } = checkUserDocument(raw);
  return { entity: { applicationId, typeName: USER_TYPE, uuid: randomUUID(), ...doc }, password, hashed };
}

/** A record as the API shows it: spec timestamps, never a password hash. */
export function renderUser(record: UserRecord, profiles: Record<string, unknown>[] = []): Record<string, unknown> {
  const standard = Object.fromEntries(STANDARD.map((k) => [k, null]));
  return {
    id: record.id,
    uuid: record.uuid,
    created: formatTimestamp(record.created),
    lastUpdated: formatTimestamp(record.lastUpdated),
    email: record.email,
    emailVerified: record.emailVerified ? formatTimestamp(record.emailVerified) : null,
    ...(record.username !== null && { username: record.username }),
    ...standard,
    ...record.attributes,
    ...(typeof record.attributes.lastLogin === 'string' && { lastLogin: formatTimestamp(new Date(record.attributes.lastLogin)) }),
    profiles,
  };
}

/** One linked identity as `capture_user.profiles` shows it. */
export function renderProfile(p: StoredProfile): Record<string, unknown> {
  let domain: string | null = null;
  try {
    domain = new URL(p.identifier).hostname;
  } catch {
    // an identifier from an external application need not be a URL
  }
  return { id: p.id, identifier: p.identifier, domain, provider: p.provider, profile: p.data, created: formatTimestamp(p.created) };
}

/** The record as the API shows it, with its linked identities. */
export const renderWithProfiles = (record: UserRecord, profiles: StoredProfile[]) => renderUser(record, profiles.map(renderProfile));

/** An operator's disable as the API and the command line show it: since, until (null: until enabled), why. */
export const renderDisable = (d: Disabled) => ({ since: formatTimestamp(d.at), until: d.until && formatTimestamp(d.until), reason: d.reason });
