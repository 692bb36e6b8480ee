import type { Storage } from './storage';
import type { Application } from './storage/applications';
import { Refusal } from './refusal';
import type { FlowDefinition } from './flow-definition';
import { compileForm, createFormCache, type CompiledForm } from './flow-forms';

export interface FlowVersion {
  name: string;
  version: number;
  locale: string;
  definition: FlowDefinition;
}

const unknownFlow = (why: string) => new Refusal('misconfigured', why);

/**
 * The flow a login call uses (docs/api.md#flows): the one it names, else its client's
 * `default_flow_name` and `default_flow_version`. Either may be missing: the API then asks for it
 * (100), a page says the login client is not set up. The one rule for every caller.
 */
export function chosenFlow(settings: { default_flow_name?: string; default_flow_version?: string }, named: { flow?: string; version?: string } = {}) {
  return { name: named.flow ?? settings.default_flow_name, version: named.version ?? settings.default_flow_version };
}

/**
 * Flow versions are immutable once imported, so each is read from the database once per process
 * and each (version, locale, form) is compiled once, never per request (docs/api.md#flows).
 * Misses are not cached: a flow imported later is found.
 */
export function createFlowService(deps: { db: Storage; now?: () => Date }) {
  const definitions = new Map<string, FlowDefinition>();
  const forms = createFormCache();

  return {
    /** The flow version a request names; docs/api.md#flows: 500 when the name, version or locale is unknown. */
    async resolve(app: Application, name: string, version: string, locale: string): Promise<FlowVersion> {
      if (!/^\d{1,9}$/.test(version)) throw unknownFlow(`flow "${name.slice(0, 64)}" has no version "${version.slice(0, 20)}"; versions are whole numbers`);
      const key = `${app.id}:${name}:${version}`;
      let definition = definitions.get(key);
      if (!definition) {
        const stored = await deps.db.lagTolerant.flows.find(app.id, name, Number(version));
        if (!stored) throw unknownFlow(`this application has no flow "${name.slice(0, 64)}" version ${version}`);
        definition = stored.definition as FlowDefinition;
        if (definitions.size > 500) definitions.clear();
        definitions.set(key, definition);
      }
      if (!definition.locales.includes(locale)) {
        throw unknownFlow(`flow "${name}" version ${version} has no locale "${locale.slice(0, 20)}"; it has ${definition.locales.join(', ')}`);
      }
      return { name, version: Number(version), locale, definition };
    },

    /** The compiled form, or undefined when the flow has no form of that (case-sensitive) name. */
    form(app: Application, flow: FlowVersion, formName: string): CompiledForm | undefined {
      return forms(`${app.id}:${flow.name}:${flow.version}:${flow.locale}:${formName}`, () =>
        compileForm(flow.definition, formName, flow.locale, deps.now));
    },

    /** A message of the flow (docs/api.md#errors: `message`, `invalid_fields`) in the flow's locale. */
    text(flow: FlowVersion, key: string): string {
      const t = flow.definition.translations[key];
      return t?.values[flow.locale] ?? t?.values['en-US'] ?? key;
    },
  };
}
export type FlowService = ReturnType<typeof createFlowService>;
