import { randomBytes } from 'node:crypto';
import { event, type Acting } from '../../domain/events';
import { invalidField, Refusal } from '../../domain/refusal';
import type { NameIdKind } from '../../domain/saml/identity-provider';
import { parseServiceProviderMetadata, signingProblem, type ServiceProviderDescriptor } from '../../domain/saml/metadata';
import { SamlInputError } from '../../domain/saml/xml';
import type { Application } from '../../domain/storage/applications';
import { DuplicateEntityError, type ServiceProviderChange, type StoredServiceProvider } from '../../domain/storage/saml';
import type { Services } from '../services';

/**
 * An application's SAML service providers (docs/saml.md#service-providers), for its owner clients
 * and the operators: each registered from its metadata, each change one use case recorded as an
 * event (the audit log names who made it).
 */

/** At most this many service providers per application. */
export const MAX_SERVICE_PROVIDERS = 100;
const MAX_NAME = 200;
const MAX_ATTRIBUTES = 30;

/** A service provider as its owner sees it. */
export interface ServiceProviderView {
  id: string; entityId: string; name: string; nameIdFormat: NameIdKind | null; attributes: Record<string, string> | null;
  assertionConsumers: string[]; singleLogout: string[]; authnRequestsSigned: boolean; certificates: number; createdAt: Date; updatedAt: Date;
}

export const serviceProviderView = (sp: StoredServiceProvider): ServiceProviderView => ({
  id: sp.publicId, entityId: sp.entityId, name: sp.name, nameIdFormat: sp.nameIdFormat, attributes: sp.attributes,
  assertionConsumers: sp.descriptor.assertionConsumers.map((e) => e.location), singleLogout: sp.descriptor.singleLogout.map((e) => e.location),
  authnRequestsSigned: sp.descriptor.authnRequestsSigned, certificates: sp.descriptor.certificates.length, createdAt: sp.createdAt, updatedAt: sp.updatedAt,
});

/** What a command may set besides the metadata. */
export interface ServiceProviderSettings {
  name?: string;
  /** `email` or `persistent`; '' clears it. */
  nameIdFormat?: string;
  /** A JSON object of SAML attribute names to record attributes; '' clears it (the defaults). */
  attributes?: string;
}

function descriptorOf(metadata: string): ServiceProviderDescriptor {
  let descriptor: ServiceProviderDescriptor;
  try {
    descriptor = parseServiceProviderMetadata(metadata);
  } catch (e) {
    if (e instanceof SamlInputError) throw invalidField('metadata', e.message);
    throw e;
  }
  const problem = signingProblem(descriptor);
  if (problem) throw invalidField('metadata', problem);
  return descriptor;
}

function nameIdFormatOf(raw: string | undefined): NameIdKind | null | undefined {
  if (raw === undefined) return undefined;
  if (raw === '') return null;
  if (raw === 'email' || raw === 'persistent') return raw;
  throw invalidField('nameIdFormat', 'must be email (the account\'s address) or persistent (an opaque id, stable for this service provider)');
}

/** The sources an attribute may be taken from: a record's column, or an attribute's dotted path. */
const SOURCE = /^(email|username|uuid|emailVerified|[A-Za-z][A-Za-z0-9_]{0,63}(\.[A-Za-z][A-Za-z0-9_]{0,63}){0,3})$/;

function attributesOf(raw: string | undefined): Record<string, string> | null | undefined {
  if (raw === undefined) return undefined;
  if (raw.trim() === '') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw invalidField('attributes', 'is not JSON: send an object of SAML attribute names to record attributes, such as {"email":"email","givenName":"givenName"}');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalidField('attributes', 'must be a JSON object of SAML attribute names to record attributes');
  const entries = Object.entries(parsed as Record<string, unknown>);
  if (entries.length > MAX_ATTRIBUTES) throw invalidField('attributes', `has more than ${MAX_ATTRIBUTES} attributes`);
  for (const [name, source] of entries) {
    if (name.length === 0 || name.length > 256 || /[\u0000-\u001f<>&"]/.test(name)) throw invalidField('attributes', `has the attribute name ${JSON.stringify(name.slice(0, 40))}: 1 to 256 characters, no control characters, < > & or "`);
    if (typeof source !== 'string' || !SOURCE.test(source)) {
      throw invalidField('attributes', `maps ${JSON.stringify(name.slice(0, 40))} to something that is not a record attribute: email, username, uuid, emailVerified, or an attribute's name (a dotted path for a nested one)`);
    }
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

function nameOf(raw: string | undefined, fallback: string): string {
  const name = (raw ?? fallback).trim();
  if (name.length === 0 || name.length > MAX_NAME) throw invalidField('name', `must be 1 to ${MAX_NAME} characters`);
  return name;
}

const taken = (entityId: string) => invalidField('metadata', `describes ${entityId}, which is a service provider of this application already (/saml/service_providers/list names it): update that one`);

/** Registers a service provider from its metadata; answers it. */
export async function addServiceProvider(
  deps: Pick<Services, 'clock' | 'db' | 'work'>, command: { app: Application; acting: Acting; metadata: string } & ServiceProviderSettings,
): Promise<ServiceProviderView> {
  const descriptor = descriptorOf(command.metadata);
  const nameIdFormat = nameIdFormatOf(command.nameIdFormat) ?? null;
  const attributes = attributesOf(command.attributes) ?? null;
  const name = nameOf(command.name, descriptor.entityId.slice(0, MAX_NAME));
  const stored = await deps.work.run(async (uow) => {
    // counted under the application's row, claimed (written) first: parallel adds never pass the limit
    await deps.db.applications.claim(command.app.id, deps.clock.now(), uow.tx);
    if ((await deps.db.saml.list(command.app.id)).length >= MAX_SERVICE_PROVIDERS) {
      throw new Refusal('invalid', `an application has at most ${MAX_SERVICE_PROVIDERS} SAML service providers; remove one first`, { field: 'metadata' });
    }
    const now = deps.clock.now();
    let sp: StoredServiceProvider;
    try {
      sp = await deps.db.saml.insert({
        applicationId: command.app.id, publicId: `sp_${randomBytes(12).toString('hex')}`, entityId: descriptor.entityId, name, metadata: command.metadata,
        descriptor, nameIdFormat, attributes, persistentSalt: randomBytes(32).toString('hex'),
      }, now, uow.tx);
    } catch (e) {
      if (e instanceof DuplicateEntityError) throw taken(descriptor.entityId);
      throw e;
    }
    uow.record(event('saml.service_provider_added', command.app.id, now, command.acting, { kind: 'service_provider', id: sp.publicId }, { entityId: sp.entityId }));
    return sp;
  });
  return serviceProviderView(stored);
}

/** The application's service providers, oldest first. */
export async function listServiceProviders(deps: Pick<Services, 'db'>, command: { app: Application }): Promise<ServiceProviderView[]> {
  return (await deps.db.saml.list(command.app.id)).map(serviceProviderView);
}

const unknownProvider = () => invalidField('id', 'is not a SAML service provider of this application (/saml/service_providers/list names them)');

/** Changes a service provider: new metadata (its certificates and endpoints; its entity id may change), name, NameID format, attributes. */
export async function updateServiceProvider(
  deps: Pick<Services, 'clock' | 'db' | 'work'>, command: { app: Application; acting: Acting; id: string; metadata?: string } & ServiceProviderSettings,
): Promise<ServiceProviderView> {
  const change: ServiceProviderChange = {};
  if (command.metadata !== undefined) {
    change.descriptor = descriptorOf(command.metadata);
    change.metadata = command.metadata;
    change.entityId = change.descriptor.entityId;
  }
  if (command.name !== undefined) change.name = nameOf(command.name, '');
  const format = nameIdFormatOf(command.nameIdFormat);
  if (format !== undefined) change.nameIdFormat = format;
  const attributes = attributesOf(command.attributes);
  if (attributes !== undefined) change.attributes = attributes;
  const fields = Object.keys(change).filter((k) => k !== 'descriptor' && k !== 'entityId');
  if (fields.length === 0) throw invalidField('metadata', 'nothing to change: send metadata, name, name_id_format or attributes');
  const updated = await deps.work.run(async (uow) => {
    const now = deps.clock.now();
    try {
      if (!(await deps.db.saml.update(command.app.id, command.id, change, now, uow.tx))) throw unknownProvider();
    } catch (e) {
      if (e instanceof DuplicateEntityError) throw taken(change.entityId ?? '');
      throw e;
    }
    const sp = (await deps.db.saml.find(command.app.id, command.id, uow.tx))!;
    uow.record(event('saml.service_provider_updated', command.app.id, now, command.acting, { kind: 'service_provider', id: sp.publicId }, { entityId: sp.entityId, fields }));
    return sp;
  });
  return serviceProviderView(updated);
}

/** Removes a service provider: its requests are refused from now on. */
export async function removeServiceProvider(deps: Pick<Services, 'clock' | 'db' | 'work'>, command: { app: Application; acting: Acting; id: string }): Promise<void> {
  await deps.work.run(async (uow) => {
    const sp = await deps.db.saml.find(command.app.id, command.id, uow.tx);
    if (!sp || !(await deps.db.saml.remove(command.app.id, command.id, uow.tx))) throw unknownProvider();
    uow.record(event('saml.service_provider_removed', command.app.id, deps.clock.now(), command.acting, { kind: 'service_provider', id: sp.publicId }, { entityId: sp.entityId }));
  });
}
