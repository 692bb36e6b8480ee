import express, { type NextFunction, type Request, type Response } from 'express';
import type { FlowDefinition, FlowField } from '../domain/flow-definition';
import type { FlowVersion } from '../domain/flows';
import { sha256Hex } from '../domain/secrets';
import { ApiError, errors, apiErrorOf } from '../errors';
import { Refusal } from '../domain/refusal';
import type { Services } from '../usecases/services';

/** Bumped when the document's shape changes, so cached copies of an older shape are not reused. */
const DOCUMENT_FORMAT = 1;
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const LOCALE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?$/;

const notFound = (why: string) => new ApiError('unknownEndpoint', why, { transportStatus: 404 });

/**
 * One flow version in the original widget format, localized: `fields` holds every field by name
 * (`type`, `schemaId`, `label`, `placeholder`, `tip`, `options`, `validation` with messages) and
 * every form by name (`fields`: its field names in order); `version` is a string. The Android and
 * iOS SDKs read forms, field types and `schemaId` from it to build their calls, and send
 * `version` back as `flow_version`.
 */
export function widgetDocument(flow: FlowVersion, text: (key: string) => string): Record<string, unknown> {
  const definition: FlowDefinition = flow.definition;
  const localized = (key: string | undefined) => (key === undefined ? undefined : text(key));
  // a confirmation field (rule `match`) writes the attribute of the field it matches: the SDKs fill
  // both from the same value
  const schemaId = (field: FlowField): string | undefined => {
    if (field.schemaAttribute) return field.schemaAttribute;
    const match = field.validation.find((r) => r.rule === 'match');
    return typeof match?.value === 'string' ? definition.fields[match.value]?.schemaAttribute : undefined;
  };
  const fields: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(definition.fields)) {
    fields[name] = {
      name,
      type: field.type,
      ...(schemaId(field) !== undefined && { schemaId: schemaId(field) }),
      ...(field.label !== undefined && { label: localized(field.label) }),
      ...(field.placeholder !== undefined && { placeholder: localized(field.placeholder) }),
      ...(field.tip !== undefined && { tip: localized(field.tip) }),
      ...(field.options && { options: field.options.map((o) => ({ value: o.value, label: text(o.label) })) }),
      validation: field.validation.map((r) => ({ rule: r.rule, ...(r.value !== undefined && { value: r.value }), message: text(r.message) })),
    };
  }
  for (const [name, form] of Object.entries(definition.forms)) {
    fields[name] = { name, type: 'form', fields: form.fields.map((f) => f.name), required: form.fields.filter((f) => f.required).map((f) => f.name) };
  }
  return { name: flow.name, version: String(flow.version), locale: flow.locale, format: DOCUMENT_FORMAT, fields };
}

/**
 * GET /widget_data/flows/{app}/{flow}/{version}/{locale}.json: where the mobile SDKs download
 * their flow (the SDKs' flow domain points here). A numbered version never changes: cached for
 * a year, with an ETag. `HEAD` names the newest version and is cached for a minute.
 */
export function flowDocumentRoutes(services: Services): express.Router {
  const router = express.Router();
  router.get('/widget_data/flows/:app/:flow/:version/:file', async (req: Request, res: Response, next: NextFunction) => {
    try {
      const { app: appName, flow: flowName, version: rawVersion, file } = req.params as Record<string, string>;
      const locale = file.endsWith('.json') ? file.slice(0, -5) : '';
      if (!NAME.test(appName) || !NAME.test(flowName) || !LOCALE.test(locale) || !/^(\d{1,9}|HEAD)$/.test(rawVersion)) {
        throw notFound('a flow document is /widget_data/flows/{app}/{flow}/{version or HEAD}/{locale}.json, such as /widget_data/flows/local/standard/1/en-US.json');
      }
      const app = await services.db.applications.findByName(appName);
      if (!app) throw notFound(`there is no application "${appName}"`);
      const head = rawVersion === 'HEAD';
      const version = head ? await services.db.lagTolerant.flows.latestVersion(app.id, flowName) : Number(rawVersion);
      if (version === undefined) throw notFound(`application "${appName}" has no flow "${flowName}"`);
      let flow: FlowVersion;
      try {
        flow = await services.flows.resolve(app, flowName, String(version), locale);
      } catch (e) {
        if (e instanceof Refusal) throw notFound(e.message);
        throw e;
      }
      const etag = `"${sha256Hex(`${DOCUMENT_FORMAT}:${app.id}:${flowName}:${version}:${locale}`).slice(0, 32)}"`;
      res.setHeader('ETag', etag);
      res.setHeader('Cache-Control', head ? 'public, max-age=60' : 'public, max-age=31536000, immutable');
      // a public document: any page may read it (no credentials are involved)
      res.setHeader('Access-Control-Allow-Origin', '*');
      if (req.headers['if-none-match'] === etag) return void res.status(304).end();
      res.json(widgetDocument(flow, (key) => services.flows.text(flow, key)));
    } catch (e) {
      const known = apiErrorOf(e);
      next(known instanceof ApiError ? known : errors.unexpected(e));
    }
  });
  return router;
}
