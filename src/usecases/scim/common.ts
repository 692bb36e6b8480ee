import type { Acting } from '../../domain/events';
import { isObject, keyOf } from '../../domain/scim/filter';
import { SCHEMA } from '../../domain/scim/schemas';
import type { Application } from '../../domain/storage/applications';
import type { StoredOrganization } from '../../domain/storage/organizations';
import type { StoredScimGroup, StoredScimUser } from '../../domain/storage/scim';
import type { Services } from '../services';

/**
 * What the SCIM use cases share (docs/scim.md): who calls (an organization's token), the refusals
 * as SCIM errors (RFC 7644 §3.12), and the resources as the protocol shows them.
 */

export type ScimErrorType = 'invalidFilter' | 'tooMany' | 'uniqueness' | 'mutability' | 'invalidSyntax' | 'invalidPath' | 'noTarget' | 'invalidValue' | 'invalidVers' | 'sensitive';

/** A refusal of the SCIM service: its HTTP status, its scimType where the RFC names one, and what to do about it. */
export class ScimError extends Error {
  constructor(readonly status: number, readonly detail: string, readonly scimType?: ScimErrorType, readonly retryAfter?: number) {
    super(detail);
  }
}

/** A call of the SCIM service: the application, the organization its token reaches, and the token as the events' actor. */
export interface ScimCall {
  app: Application;
  organization: StoredOrganization;
  acting: Acting;
  /** The SCIM service's address (`https://…/scim/v2`), for `meta.location`. */
  base: string;
}

export type ScimDeps = Pick<Services, 'db' | 'clock' | 'work' | 'versions' | 'passwords' | 'baseUrls' | 'rateLimiter'>;

/** A resource's version as an ETag (weak: equal versions are equal resources, not equal bytes). */
export const etagOf = (version: number): string => `W/"${version}"`;

/** Whether an If-Match header names the version (`*` names any). */
export function ifMatch(header: string | undefined, version: number): boolean {
  if (header === undefined) return true;
  return header.split(',').map((t) => t.trim()).some((t) => t === '*' || t === etagOf(version) || t === `"${version}"`);
}

export const notFound = (kind: 'User' | 'Group', id: string) => new ScimError(404, `${kind} ${JSON.stringify(id.slice(0, 64))} is not one of this organization's`);

/** A user as SCIM shows it. */
export function userResource(call: Pick<ScimCall, 'base'>, user: StoredScimUser, groups: { resourceId: string; displayName: string }[]): Record<string, unknown> {
  const { userName: _u, externalId: _e, active: _a, ...rest } = user.data;
  return {
    schemas: [SCHEMA.user, ...(isObject(user.data[SCHEMA.enterprise]) ? [SCHEMA.enterprise] : [])],
    id: user.resourceId,
    ...(user.externalId !== null && { externalId: user.externalId }),
    userName: user.userName,
    ...rest,
    active: user.active,
    groups: groups.map((g) => ({ value: g.resourceId, $ref: `${call.base}/Groups/${g.resourceId}`, display: g.displayName })),
    meta: {
      resourceType: 'User', created: user.createdAt.toISOString(), lastModified: user.updatedAt.toISOString(),
      location: `${call.base}/Users/${user.resourceId}`, version: etagOf(user.version),
    },
  };
}

/** A group as SCIM shows it (its members, or none when they were not read). */
export function groupResource(call: Pick<ScimCall, 'base'>, group: StoredScimGroup, members: { resourceId: string; userName: string }[] | undefined): Record<string, unknown> {
  return {
    schemas: [SCHEMA.group],
    id: group.resourceId,
    ...(group.externalId !== null && { externalId: group.externalId }),
    displayName: group.displayName,
    ...(members && { members: members.map((m) => ({ value: m.resourceId, $ref: `${call.base}/Users/${m.resourceId}`, display: m.userName, type: 'User' })) }),
    meta: {
      resourceType: 'Group', created: group.createdAt.toISOString(), lastModified: group.updatedAt.toISOString(),
      location: `${call.base}/Groups/${group.resourceId}`, version: etagOf(group.version),
    },
  };
}

/** `attributes` and `excludedAttributes` (RFC 7644 §3.9) as lists of paths, lower-cased. */
export interface Projection { attributes?: string[]; excluded?: string[] }

export function projectionOf(attributes: unknown, excluded: unknown): Projection {
  const list = (v: unknown, name: string) => {
    if (v === undefined || v === null || v === '') return undefined;
    const items = Array.isArray(v) ? v : String(v).split(',');
    if (items.length > 100 || items.some((i) => typeof i !== 'string' || i.length > 300)) throw new ScimError(400, `${name} must be attribute names separated by commas`, 'invalidValue');
    return (items as string[]).map((i) => i.trim().toLowerCase()).filter((i) => i !== '');
  };
  return { attributes: list(attributes, 'attributes'), excluded: list(excluded, 'excludedAttributes') };
}

/** The resource with only what `projection` asks for: `id` and `schemas` always; `password` never exists. */
export function projected(resource: Record<string, unknown>, projection: Projection, core: string): Record<string, unknown> {
  const split = (path: string): [string | undefined, string, string | undefined] => {
    let schema: string | undefined;
    let rest = path;
    if (path.startsWith('urn:')) {
      // a schema's URN alone names its whole extension
      if ([SCHEMA.enterprise, SCHEMA.user, SCHEMA.group].some((s) => s.toLowerCase() === path)) return [path, '*', undefined];
      const colon = path.lastIndexOf(':');
      schema = path.slice(0, colon);
      rest = path.slice(colon + 1);
    }
    const [attr, sub] = rest.split('.');
    return [schema === core.toLowerCase() ? undefined : schema, attr, sub];
  };
  const holderOf = (obj: Record<string, unknown>, schema: string | undefined) => {
    if (schema === undefined) return obj;
    const k = keyOf(obj, schema);
    return k !== undefined && isObject(obj[k]) ? obj[k] as Record<string, unknown> : undefined;
  };
  if (projection.attributes && projection.attributes.length > 0) {
    const out: Record<string, unknown> = { schemas: resource.schemas, id: resource.id };
    for (const path of projection.attributes) {
      const [schema, attr, sub] = split(path);
      const from = holderOf(resource, schema);
      if (!from) continue;
      if (attr === '*') {
        const k = keyOf(resource, schema!);
        if (k !== undefined) out[k] = resource[k];
        continue;
      }
      const k = keyOf(from, attr);
      if (k === undefined) continue;
      let target = out;
      if (schema !== undefined) {
        const sk = keyOf(resource, schema)!;
        target = (out[sk] ??= {}) as Record<string, unknown>;
      }
      if (sub === undefined) target[k] = from[k];
      else if (Array.isArray(from[k])) target[k] = (from[k] as unknown[]).map((v) => (isObject(v) && keyOf(v, sub) !== undefined ? { [keyOf(v, sub)!]: v[keyOf(v, sub)!] } : {}));
      else if (isObject(from[k])) {
        const inner = from[k] as Record<string, unknown>;
        const ik = keyOf(inner, sub);
        if (ik !== undefined) target[k] = { ...(isObject(target[k]) ? target[k] as Record<string, unknown> : {}), [ik]: inner[ik] };
      }
    }
    return out;
  }
  if (projection.excluded && projection.excluded.length > 0) {
    const out = JSON.parse(JSON.stringify(resource)) as Record<string, unknown>;
    for (const path of projection.excluded) {
      const [schema, attr, sub] = split(path);
      if (attr === 'id' || attr === 'schemas') continue;
      const from = holderOf(out, schema);
      if (!from) continue;
      if (attr === '*') {
        delete out[keyOf(out, schema!)!];
        continue;
      }
      const k = keyOf(from, attr);
      if (k === undefined) continue;
      if (sub === undefined) delete from[k];
      else if (isObject(from[k])) delete (from[k] as Record<string, unknown>)[keyOf(from[k] as Record<string, unknown>, sub) ?? sub];
      else if (Array.isArray(from[k])) for (const v of from[k] as unknown[]) if (isObject(v)) delete v[keyOf(v, sub) ?? sub];
    }
    return out;
  }
  return resource;
}

/** `startIndex` and `count` (RFC 7644 §3.4.2.4): 1-based; count at most the page size (0: totalResults alone). */
export function pageOf(startIndex: unknown, count: unknown, max: number): { start: number; count: number } {
  const int = (v: unknown, name: string, fallback: number) => {
    if (v === undefined || v === null || v === '') return fallback;
    const n = typeof v === 'number' ? v : /^-?\d{1,9}$/.test(String(v)) ? Number(v) : NaN;
    if (!Number.isInteger(n)) throw new ScimError(400, `${name} must be an integer`, 'invalidValue');
    return n;
  };
  // a start below 1 is read as 1 and a negative count as 0 (RFC 7644 §3.4.2.4)
  return { start: Math.max(1, int(startIndex, 'startIndex', 1)), count: Math.min(max, Math.max(0, int(count, 'count', max))) };
}
