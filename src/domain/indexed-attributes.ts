/**
 * Indexed attributes (docs/entity-filters.md#indexed-attributes): what an operator may index, and
 * the value a record keeps in the index for one. Attributes with a column of their own (id, uuid,
 * email, username, the times) are indexed already; linked identities and the password never are.
 */

/** Characters of a string an index key holds: a longer string is found by its first ones, then checked whole. */
export const INDEX_TEXT_CHARS = 191;

/** How long a pod keeps an application's declared attributes before reading them again (its writes keep what it read). */
export const DEFINITIONS_TTL_MS = 2_000;
/** How long after its declaration an attribute's build starts: past every pod's cache of the declarations, and any write begun before it. */
export const BUILD_DELAY_MS = 10_000;

/** Indexed attributes an application may have (each costs every write of a record a row). */
export const MAX_INDEXED_ATTRIBUTES = 16;

/** Attributes that have an index of their own, or can never be searched. */
const NOT_INDEXABLE = new Map<string, string>([
  ...['id', 'uuid', 'email', 'username', 'created', 'lastUpdated', 'emailVerified'].map((n) => [n, `${n} has an index of its own`] as [string, string]),
  ...['password', 'passwordHash', 'password_hash'].map((n) => [n, `${n} cannot be searched`] as [string, string]),
  ['profiles', 'linked identities are searched through their own table (profiles.identifier, profiles.provider)'],
]);

/** An attribute's name cannot be indexed: why, for the person who asked. */
export class IndexNameError extends Error {}

/**
 * The dotted path an operator asked to index (`familyName`, `primaryAddress.country`), checked:
 * names of letters, digits and _ (starting with a letter), at most 4 deep, not an attribute with
 * a column of its own. Throws IndexNameError saying what is wrong.
 */
export function indexName(raw: string): string {
  const name = raw.trim();
  const parts = name.split('.');
  if (name.length === 0 || name.length > INDEX_TEXT_CHARS || parts.length > 4 || !parts.every((p) => /^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(p))) {
    throw new IndexNameError('name an attribute of the records: letters, digits and _ starting with a letter, a member of one as parent.child (at most 4 deep)');
  }
  const refused = NOT_INDEXABLE.get(parts[0]);
  if (refused) throw new IndexNameError(refused);
  return name;
}

/** What a record keeps in the index for one attribute: its kind and value. */
export interface IndexedValue {
  /** 0: none (missing or null), 1: a string, 2: a number, 3: a boolean, 4: an object or array (found by is null / is not null only). */
  kind: 0 | 1 | 2 | 3 | 4;
  text: string | null;
  number: number | null;
}

/** The value at the dotted `name` of a record's attributes, as the index keeps it. */
export function indexedValue(attributes: Record<string, unknown>, name: string): IndexedValue {
  let value: unknown = attributes;
  for (const part of name.split('.')) {
    value = value !== null && typeof value === 'object' && !Array.isArray(value) && Object.hasOwn(value, part) ? (value as Record<string, unknown>)[part] : undefined;
  }
  if (value === undefined || value === null) return { kind: 0, text: null, number: null };
  if (typeof value === 'string') return { kind: 1, text: [...value].slice(0, INDEX_TEXT_CHARS).join(''), number: null };
  // (a number past a double's range is stored as JSON null, and kept as none)
  if (typeof value === 'number') return Number.isFinite(value) ? { kind: 2, text: null, number: value } : { kind: 0, text: null, number: null };
  if (typeof value === 'boolean') return { kind: 3, text: null, number: value ? 1 : 0 };
  return { kind: 4, text: null, number: null };
}

/** Another worker built the same batch of an index meanwhile: this one wrote nothing. */
export class IndexBuildRaced extends Error {
  constructor(name: string) {
    super(`another worker built this batch of the index of ${name}`);
  }
}

/** Whether two values keep the same index row. */
export const sameIndexed = (a: IndexedValue, b: IndexedValue) => a.kind === b.kind && a.text === b.text && a.number === b.number;

/** An indexed attribute as operators see it. */
export interface IndexedAttribute {
  name: string;
  /** building: existing records are being added (searches do not use it yet); ready: searches use it; removing: its values are being deleted. */
  state: 'building' | 'ready' | 'removing';
  created: Date;
  ready: Date | null;
}
