import { isObject, keyOf } from './filter';

/**
 * The schemas Gatehouse's SCIM service speaks (RFC 7643 §4, §7, §8.7): the core User and Group,
 * the enterprise-user extension; what /Schemas answers, and what a written resource is read
 * against: each attribute by its name in any case, written back in the schema's case; a string
 * "True" or "false" taken as the boolean (Entra ID sends them); readOnly attributes and those no
 * schema names ignored (RFC 7644 §3.3).
 */

/** Where the SCIM service answers, on the application's address. */
export const SCIM_PATH = '/scim/v2';

export const SCHEMA = {
  user: 'urn:ietf:params:scim:schemas:core:2.0:User',
  group: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  enterprise: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
  listResponse: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  searchRequest: 'urn:ietf:params:scim:api:messages:2.0:SearchRequest',
  patchOp: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  error: 'urn:ietf:params:scim:api:messages:2.0:Error',
  serviceProviderConfig: 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig',
  resourceType: 'urn:ietf:params:scim:schemas:core:2.0:ResourceType',
  schema: 'urn:ietf:params:scim:schemas:core:2.0:Schema',
} as const;

export type AttrType = 'string' | 'boolean' | 'decimal' | 'integer' | 'dateTime' | 'reference' | 'complex';
export interface AttributeDef {
  name: string;
  type: AttrType;
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact: boolean;
  mutability: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned: 'always' | 'never' | 'default' | 'request';
  uniqueness: 'none' | 'server' | 'global';
  subAttributes?: AttributeDef[];
  canonicalValues?: string[];
  referenceTypes?: string[];
}

const attr = (name: string, description: string, more: Partial<AttributeDef> = {}): AttributeDef => ({
  name, type: 'string', multiValued: false, description, required: false, caseExact: false, mutability: 'readWrite', returned: 'default', uniqueness: 'none', ...more,
});
const bool = (name: string, description: string) => attr(name, description, { type: 'boolean' });
/** A multi-valued attribute of the usual shape: value, display, type, primary. */
const plural = (name: string, description: string, types?: string[], valueType: AttrType = 'string') => attr(name, description, {
  type: 'complex', multiValued: true, subAttributes: [
    attr('value', `The ${name} value`, { type: valueType }), attr('display', 'A name for display'),
    attr('type', 'What kind of value', types ? { canonicalValues: types } : {}), bool('primary', 'The primary value'),
  ],
});

export const USER_ATTRIBUTES: AttributeDef[] = [
  attr('userName', 'The unique name the directory signs the person in with (unique regardless of case)', { required: true, uniqueness: 'server' }),
  attr('name', 'The parts of the person\'s name', {
    type: 'complex', subAttributes: ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((n) => attr(n, `The ${n} of the name`)),
  }),
  attr('displayName', 'The name shown for the person'),
  attr('nickName', 'A casual name'),
  attr('profileUrl', 'A page about the person', { type: 'reference', referenceTypes: ['external'] }),
  attr('title', 'The person\'s title'),
  attr('userType', 'What the person is to the organization'),
  attr('preferredLanguage', 'The person\'s language (Accept-Language form)'),
  attr('locale', 'The person\'s locale'),
  attr('timezone', 'The person\'s time zone (IANA)'),
  bool('active', 'Whether the person may sign in'),
  attr('password', 'Never returned', { mutability: 'writeOnly', returned: 'never' }),
  plural('emails', 'Email addresses; the primary (or work, or first) is the account\'s address', ['work', 'home', 'other']),
  plural('phoneNumbers', 'Phone numbers', ['work', 'home', 'mobile', 'fax', 'pager', 'other']),
  plural('ims', 'Instant messaging addresses'),
  plural('photos', 'Pictures of the person', ['photo', 'thumbnail'], 'reference'),
  attr('addresses', 'Postal addresses', {
    type: 'complex', multiValued: true,
    subAttributes: ['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type'].map((n) => attr(n, `The ${n} of the address`)).concat(bool('primary', 'The primary address')),
  }),
  attr('groups', 'The groups the person is in (read-only: written through the groups)', {
    type: 'complex', multiValued: true, mutability: 'readOnly',
    subAttributes: [attr('value', 'The group\'s id', { mutability: 'readOnly' }), attr('$ref', 'The group', { type: 'reference', referenceTypes: ['Group'], mutability: 'readOnly' }), attr('display', 'Its name', { mutability: 'readOnly' })],
  }),
  plural('entitlements', 'Entitlements'),
  plural('roles', 'Roles in the directory'),
];

export const ENTERPRISE_ATTRIBUTES: AttributeDef[] = [
  attr('employeeNumber', 'The employee number'),
  attr('costCenter', 'The cost center'),
  attr('organization', 'The organization\'s name'),
  attr('division', 'The division'),
  attr('department', 'The department'),
  attr('manager', 'The person\'s manager', {
    type: 'complex', subAttributes: [attr('value', 'The manager\'s id'), attr('$ref', 'The manager', { type: 'reference', referenceTypes: ['User'] }), attr('displayName', 'The manager\'s name', { mutability: 'readOnly' })],
  }),
];

export const GROUP_ATTRIBUTES: AttributeDef[] = [
  attr('displayName', 'The group\'s name (unique regardless of case)', { required: true, uniqueness: 'server' }),
  attr('members', 'The group\'s members', {
    type: 'complex', multiValued: true, subAttributes: [
      attr('value', 'The member\'s id', { mutability: 'immutable' }), attr('$ref', 'The member', { type: 'reference', referenceTypes: ['User'], mutability: 'immutable' }),
      attr('display', 'The member\'s name', { mutability: 'readOnly' }), attr('type', 'User', { mutability: 'immutable', canonicalValues: ['User'] }),
    ],
  }),
];

/** What every resource has beside its schema's attributes (RFC 7643 §3.1). */
const COMMON_ATTRIBUTES: AttributeDef[] = [
  attr('id', 'The resource\'s id', { mutability: 'readOnly', returned: 'always', caseExact: true, uniqueness: 'server' }),
  attr('externalId', 'The directory\'s id of the resource', { caseExact: true }),
];

/** A value written that its schema does not take: SCIM's `invalidValue`. */
export class ScimValueError extends Error {}

const MAX_STRING = 2048;
const MAX_VALUES = 50;
const MAX_MEMBERS = 100_000;

function scalar(def: AttributeDef, raw: unknown, where: string): unknown {
  if (raw === null) return undefined;
  switch (def.type) {
    case 'boolean':
      if (typeof raw === 'boolean') return raw;
      if (typeof raw === 'string' && /^(true|false)$/i.test(raw)) return raw.toLowerCase() === 'true';
      throw new ScimValueError(`${where} must be true or false`);
    case 'integer':
    case 'decimal':
      if (typeof raw === 'number' && Number.isFinite(raw)) return raw;
      throw new ScimValueError(`${where} must be a number`);
    default:
      if (typeof raw === 'number' || typeof raw === 'boolean') return String(raw);
      if (typeof raw !== 'string') throw new ScimValueError(`${where} must be a string`);
      if (raw.length > MAX_STRING) throw new ScimValueError(`${where} is longer than ${MAX_STRING} characters`);
      return raw;
  }
}

function complexValue(def: AttributeDef, raw: unknown, where: string): Record<string, unknown> | undefined {
  if (raw === null) return undefined;
  // a bare value of an attribute with a `value` (Entra ID's manager: "…")
  if ((typeof raw === 'string' || typeof raw === 'number') && def.subAttributes?.some((s) => s.name === 'value')) return raw === '' ? undefined : { value: String(raw) };
  if (!isObject(raw)) throw new ScimValueError(`${where} must be an object`);
  const out: Record<string, unknown> = {};
  for (const sub of def.subAttributes ?? []) {
    const k = keyOf(raw, sub.name);
    if (k === undefined || sub.mutability === 'readOnly') continue;
    const v = scalar(sub, raw[k], `${where}.${sub.name}`);
    if (v !== undefined && v !== '') out[sub.name] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** One attribute's value as its definition takes it (undefined: none). */
export function attributeValue(def: AttributeDef, raw: unknown, where = def.name): unknown {
  if (raw === undefined || raw === null) return undefined;
  if (def.multiValued) {
    const list = Array.isArray(raw) ? raw : [raw];
    // a group's members are as many as its people (src/usecases/scim/groups.ts bounds them)
    const most = def.name === 'members' ? MAX_MEMBERS : MAX_VALUES;
    if (list.length > most) throw new ScimValueError(`${where} has more than ${most} values`);
    const values = list.map((v, i) => (def.type === 'complex' ? complexValue(def, v, `${where}[${i}]`) : scalar(def, v, `${where}[${i}]`)))
      .filter((v) => v !== undefined);
    const seen = new Set<string>();
    const unique = values.filter((v) => {
      const key = JSON.stringify(v);
      return seen.has(key) ? false : (seen.add(key), true);
    });
    // at most one primary (RFC 7643 §2.4): the last one written wins
    const primaries = unique.filter((v) => isObject(v) && v.primary === true);
    for (const p of primaries.slice(0, -1)) delete (p as Record<string, unknown>).primary;
    return unique.length > 0 ? unique : undefined;
  }
  if (def.type === 'complex') return complexValue(def, raw, where);
  const v = scalar(def, raw, where);
  return v === '' ? undefined : v;
}

/**
 * A written resource read against its schemas: attributes by definition (any case in, the
 * schema's case out), an extension under its URN; what no schema names, readOnly attributes and
 * `password` left out (the password is answered apart).
 */
export function readResource(raw: Record<string, unknown>, kind: 'user' | 'group'): { data: Record<string, unknown>; password?: string } {
  const defs = kind === 'user' ? USER_ATTRIBUTES : GROUP_ATTRIBUTES;
  const data: Record<string, unknown> = {};
  let password: string | undefined;
  const externalKey = keyOf(raw, 'externalId');
  if (externalKey !== undefined) {
    const v = attributeValue(COMMON_ATTRIBUTES[1], raw[externalKey]);
    if (v !== undefined) data.externalId = v;
  }
  for (const def of defs) {
    const k = keyOf(raw, def.name);
    if (k === undefined || def.mutability === 'readOnly') continue;
    if (def.name === 'password') {
      const v = scalar(def, raw[k], 'password');
      if (typeof v === 'string' && v !== '') password = v;
      continue;
    }
    const v = attributeValue(def, raw[k]);
    if (v !== undefined) data[def.name] = v;
  }
  if (kind === 'user') {
    const ek = keyOf(raw, SCHEMA.enterprise);
    if (ek !== undefined && raw[ek] !== null) {
      if (!isObject(raw[ek])) throw new ScimValueError(`${SCHEMA.enterprise} must be an object`);
      const ext: Record<string, unknown> = {};
      for (const def of ENTERPRISE_ATTRIBUTES) {
        const k = keyOf(raw[ek] as Record<string, unknown>, def.name);
        if (k === undefined) continue;
        const v = attributeValue(def, (raw[ek] as Record<string, unknown>)[k], `${SCHEMA.enterprise}:${def.name}`);
        if (v !== undefined) ext[def.name] = v;
      }
      if (Object.keys(ext).length > 0) data[SCHEMA.enterprise] = ext;
    }
  }
  return { data, ...(password !== undefined && { password }) };
}

/** The definition of an attribute by name (any case) in a resource's schemas, or undefined. */
export function definitionOf(kind: 'user' | 'group', attrName: string, schema?: string): AttributeDef | undefined {
  const lower = attrName.toLowerCase();
  const defs = schema?.toLowerCase() === SCHEMA.enterprise.toLowerCase() ? ENTERPRISE_ATTRIBUTES
    : [...COMMON_ATTRIBUTES, ...(kind === 'user' ? USER_ATTRIBUTES : GROUP_ATTRIBUTES)];
  return defs.find((d) => d.name.toLowerCase() === lower);
}

/** /Schemas: each schema as RFC 7643 §7 describes it, with its meta. */
export function schemaDocuments(base: string) {
  const doc = (id: string, name: string, description: string, attributes: AttributeDef[]) => ({
    schemas: [SCHEMA.schema], id, name, description, attributes, meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  });
  return [
    doc(SCHEMA.user, 'User', 'A person of the organization: an account of the application, a member of the organization', USER_ATTRIBUTES),
    doc(SCHEMA.group, 'Group', 'A group of the organization\'s people; it may give its members one of the organization\'s roles', GROUP_ATTRIBUTES),
    doc(SCHEMA.enterprise, 'EnterpriseUser', 'The enterprise user extension', ENTERPRISE_ATTRIBUTES),
  ];
}

/** /ResourceTypes. */
export function resourceTypeDocuments(base: string) {
  return [
    {
      schemas: [SCHEMA.resourceType], id: 'User', name: 'User', endpoint: '/Users', description: 'A person of the organization', schema: SCHEMA.user,
      schemaExtensions: [{ schema: SCHEMA.enterprise, required: false }], meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` },
    },
    {
      schemas: [SCHEMA.resourceType], id: 'Group', name: 'Group', endpoint: '/Groups', description: 'A group of the organization\'s people', schema: SCHEMA.group,
      schemaExtensions: [], meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` },
    },
  ];
}

/** The most resources one page lists. */
export const MAX_PAGE_SIZE = 200;

/** /ServiceProviderConfig (RFC 7643 §5). */
export function serviceProviderConfig(base: string, documentation: string) {
  return {
    schemas: [SCHEMA.serviceProviderConfig],
    documentationUri: documentation,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_PAGE_SIZE },
    changePassword: { supported: true },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [{
      type: 'oauthbearertoken', name: 'Bearer token', description: 'The organization\'s SCIM token, in Authorization: Bearer', specUri: 'https://www.rfc-editor.org/rfc/rfc6750', primary: true,
    }],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}
