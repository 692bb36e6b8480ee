import { formatTimestamp } from '../../domain/timestamps';
import {
  addServiceProvider, listServiceProviders, removeServiceProvider, updateServiceProvider, type ServiceProviderSettings, type ServiceProviderView,
} from '../../usecases/saml/service-providers';
import { adminCall, type Handler, type RequestContext } from '../context';

/** A SAML service provider on the wire (docs/saml.md#service-providers). */
export const shownServiceProvider = (sp: ServiceProviderView) => ({
  id: sp.id, entity_id: sp.entityId, name: sp.name, name_id_format: sp.nameIdFormat, attributes: sp.attributes,
  assertion_consumer_services: sp.assertionConsumers, single_logout_services: sp.singleLogout, authn_requests_signed: sp.authnRequestsSigned,
  certificates: sp.certificates, created: formatTimestamp(sp.createdAt), updated: formatTimestamp(sp.updatedAt),
});

const settingsOf = (ctx: RequestContext): ServiceProviderSettings => {
  const name = ctx.params.get('name');
  const nameIdFormat = ctx.params.get('name_id_format');
  const attributes = ctx.params.get('attributes');
  return { ...(name !== undefined && { name }), ...(nameIdFormat !== undefined && { nameIdFormat }), ...(attributes !== undefined && { attributes }) };
};

/** /saml/service_providers/add: a service provider from its metadata; answers its id and entity id. */
export const addProvider: Handler = async (ctx) => {
  const added = await addServiceProvider(ctx.services, { app: ctx.app, acting: adminCall(ctx).acting, metadata: ctx.params.require('metadata'), ...settingsOf(ctx) });
  return { result: shownServiceProvider(added), id: added.id, entity_id: added.entityId };
};

/** /saml/service_providers/list: the application's service providers, oldest first. */
export const listProviders: Handler = async (ctx) => ({ results: (await listServiceProviders(ctx.services, { app: ctx.app })).map(shownServiceProvider) });

/** /saml/service_providers/update: new metadata, name, NameID format or attributes. */
export const updateProvider: Handler = async (ctx) => {
  const metadata = ctx.params.get('metadata');
  const updated = await updateServiceProvider(ctx.services, {
    app: ctx.app, acting: adminCall(ctx).acting, id: ctx.params.require('id'), ...(metadata !== undefined && { metadata }), ...settingsOf(ctx),
  });
  return { result: shownServiceProvider(updated) };
};

/** /saml/service_providers/remove: its requests are refused from now on. */
export const removeProvider: Handler = async (ctx) => {
  await removeServiceProvider(ctx.services, { app: ctx.app, acting: adminCall(ctx).acting, id: ctx.params.require('id') });
  return {};
};
