import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as yup from 'yup';
import { OPERATOR_ROLE_ATTRIBUTE } from './operators';

/**
 * The flow format, modelled on the original service's Configuration API resources so its users
 * can bring their flows over. A flow directory holds `flow.json` (name, locales, fields, forms)
 * and `translations.json` (key → {values: {locale: text}}). docs/flows.md describes it.
 */
export const FIELD_TYPES = ['text', 'textarea', 'email', 'password', 'select', 'radio', 'checkbox', 'dateselect'] as const;
/** `notCommon`: a new password must not be on the list of commonly used passwords (docs/passwords.md). */
export const RULES = ['required', 'minLength', 'maxLength', 'format', 'match', 'unique', 'minYears', 'notCommon'] as const;
export const FORMATS = [
  'alpha', 'alphaExtended', 'alphaExtendedSpaces', 'alphaNumeric', 'alphaNumericExtended', 'email', 'numeric',
  'numericReal', 'phone', 'phoneInternational', 'zipCode', 'zipCode+4',
] as const;

/** Messages the service itself needs from every flow, in every locale. */
export const MESSAGE_KEYS = [
  'errors.invalidCredentials', 'errors.wrongCurrentPassword', 'errors.tooLong', 'errors.invalidCharacters',
  'errors.invalidOption', 'errors.invalidDate', 'errors.noSuchAccount', 'errors.noPassword', 'errors.alreadyVerified',
] as const;

export interface FlowRule { rule: (typeof RULES)[number]; value?: unknown; message: string }
export interface FlowField {
  type: (typeof FIELD_TYPES)[number];
  name?: string;
  schemaAttribute?: string;
  label?: string;
  placeholder?: string;
  tip?: string;
  options?: { value: string; label: string }[];
  validation: FlowRule[];
}
export interface FlowForm { action?: string; fields: { name: string; required: boolean }[] }
export interface FlowDefinition {
  name: string;
  /** `allowResetWithoutPassword`: forgot_password_native also mails accounts without a password. */
  settings?: { allowResetWithoutPassword?: boolean };
  locales: string[];
  fields: Record<string, FlowField>;
  forms: Record<string, FlowForm>;
  translations: Record<string, { values: Record<string, string> }>;
}

export class FlowDefinitionError extends Error {
  constructor(readonly problems: string[]) {
    super(`the flow is not valid:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'FlowDefinitionError';
  }
}

const LOCALE = /^[a-z]{2,3}-[A-Z]{2}$/;
const NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

const ruleSchema = yup.object({
  rule: yup.string().oneOf([...RULES], '${path}: "${value}" is not a rule; use one of ' + RULES.join(', ')).required(),
  value: yup.mixed(),
  message: yup.string().required(),
});
const fieldSchema = yup.object({
  type: yup.string().oneOf([...FIELD_TYPES], '${path}: "${value}" is not a field type; use one of ' + FIELD_TYPES.join(', ')).required(),
  schemaAttribute: yup.string(),
  label: yup.string(),
  placeholder: yup.string(),
  tip: yup.string(),
  options: yup.array(yup.object({ value: yup.string().required(), label: yup.string().required() })),
  validation: yup.array(ruleSchema).default([]),
});
const formSchema = yup.object({
  action: yup.string(),
  fields: yup.array(yup.object({ name: yup.string().required(), required: yup.boolean().default(false) })).required(),
});
const flowSchema = yup.object({
  name: yup.string().matches(NAME, 'must be a name of letters, digits and _').required(),
  locales: yup.array(yup.string().matches(LOCALE, 'must be a locale such as en-US').required()).min(1).required(),
  fields: yup.object().required(),
  forms: yup.object().required(),
  translations: yup.object().required(),
  settings: yup.object({ allowResetWithoutPassword: yup.boolean() }).noUnknown('${path} has an unknown setting').default(undefined),
});

/** Checks what the schema cannot: names resolve, every text exists in every locale, rule values fit. */
function crossCheck(flow: FlowDefinition): string[] {
  const problems: string[] = [];
  const needText = (key: string | undefined, where: string) => {
    if (key === undefined) return;
    const t = flow.translations[key];
    if (!t) return problems.push(`${where}: translation "${key}" is not defined in translations.json`);
    for (const locale of flow.locales) {
      if (typeof t.values?.[locale] !== 'string' || t.values[locale].trim() === '') {
        problems.push(`translations.json: "${key}" has no text for ${locale}`);
      }
    }
  };
  for (const [fieldName, raw] of Object.entries(flow.fields)) {
    const where = `fields.${fieldName}`;
    if (!NAME.test(fieldName)) problems.push(`${where}: field names are letters, digits and _`);
    if ((raw as { schemaAttribute?: unknown } | undefined)?.schemaAttribute === OPERATOR_ROLE_ATTRIBUTE) {
      problems.push(`${where}: ${OPERATOR_ROLE_ATTRIBUTE} is an operator's role, given by an operator (gatehouse operators:role), never by a form`);
    }
    try {
      const field = fieldSchema.validateSync(raw, { strict: false, stripUnknown: false }) as FlowField;
      needText(field.label, `${where}.label`);
      needText(field.placeholder, `${where}.placeholder`);
      needText(field.tip, `${where}.tip`);
      field.options?.forEach((o, i) => needText(o.label, `${where}.options[${i}].label`));
      field.validation.forEach((r, i) => {
        const at = `${where}.validation[${i}]`;
        needText(r.message, `${at}.message`);
        if (r.rule === 'format' && !FORMATS.includes(r.value as (typeof FORMATS)[number])) {
          problems.push(`${at}: format "${String(r.value)}" is unknown; use one of ${FORMATS.join(', ')}`);
        }
        if (['minLength', 'maxLength', 'minYears'].includes(r.rule) && !(Number.isInteger(r.value) && (r.value as number) >= 0)) {
          problems.push(`${at}: ${r.rule} needs a whole number value`);
        }
        if (r.rule === 'notCommon' && field.type !== 'password') problems.push(`${at}: notCommon is a rule of password fields`);
        if (r.rule === 'match' && !(typeof r.value === 'string' && flow.fields[r.value])) {
          problems.push(`${at}: match names field "${String(r.value)}", which is not defined`);
        }
      });
    } catch (e) {
      problems.push(`${where}: ${(e as yup.ValidationError).errors.join('; ')}`);
    }
  }
  for (const key of MESSAGE_KEYS) needText(key, 'the service\'s messages');
  for (const [formName, raw] of Object.entries(flow.forms)) {
    try {
      const form = formSchema.validateSync(raw) as FlowForm;
      form.fields.forEach((f, i) => {
        const field = flow.fields[f.name] as FlowField | undefined;
        if (!field) problems.push(`forms.${formName}.fields[${i}]: field "${f.name}" is not defined in fields`);
        else if (f.required && !field.validation?.some((r) => r.rule === 'required')) {
          problems.push(`forms.${formName}.fields[${i}]: "${f.name}" is required here, so fields.${f.name} needs a required rule with its message`);
        }
      });
    } catch (e) {
      problems.push(`forms.${formName}: ${(e as yup.ValidationError).errors.join('; ')}`);
    }
  }
  return problems;
}

/** Validates a parsed definition; throws a FlowDefinitionError naming every broken place. */
export function validateFlow(candidate: unknown): FlowDefinition {
  try {
    flowSchema.validateSync(candidate, { abortEarly: false });
  } catch (e) {
    throw new FlowDefinitionError((e as yup.ValidationError).errors);
  }
  const flow = candidate as FlowDefinition;
  const problems = crossCheck(flow);
  if (problems.length > 0) throw new FlowDefinitionError(problems);
  return flow;
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    throw new FlowDefinitionError([`${file}: cannot be read`]);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new FlowDefinitionError([`${file}: not valid JSON (${(e as Error).message})`]);
  }
}

/** Reads and validates the flow in `dir` (flow.json + translations.json). */
export function loadFlowDirectory(dir: string): { definition: FlowDefinition; checksum: string } {
  return flowSource(readJson(path.join(dir, 'flow.json')), readJson(path.join(dir, 'translations.json')));
}

/** A flow from its two documents (a folder's flow.json and translations.json, or the console's form), validated; FlowDefinitionError lists what is wrong. */
export function flowSource(flow: unknown, translations: unknown): { definition: FlowDefinition; checksum: string } {
  if (!flow || typeof flow !== 'object' || Array.isArray(flow)) throw new FlowDefinitionError(['flow.json: must be a JSON object']);
  const definition = validateFlow({ ...(flow as Record<string, unknown>), translations });
  const checksum = createHash('sha256').update(JSON.stringify(definition)).digest('hex');
  return { definition, checksum };
}

/** The flow directories under `root`: `root` itself when it holds flow.json, else its subfolders that do. */
export function findFlowDirectories(root: string): string[] {
  if (fs.existsSync(path.join(root, 'flow.json'))) return [root];
  if (!fs.existsSync(root)) throw new FlowDefinitionError([`${root}: no such directory`]);
  const dirs = fs.readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(root, d.name, 'flow.json')))
    .map((d) => path.join(root, d.name))
    .sort();
  if (dirs.length === 0) throw new FlowDefinitionError([`${root}: holds no flow.json, nor any folder with one`]);
  return dirs;
}
