import * as yup from 'yup';
import type { FlowDefinition, FlowField, FlowRule } from './flow-definition';
import { isValidEmail } from './users';
import { isCommonPassword } from './common-passwords';
import { LOWEST_MIN_LENGTH } from './password-minimum';

/** What a flow without its own message says of a commonly used password (the service's texts say it in each locale). */
const COMMON_PASSWORD = 'This password is one of the most used, and the first one attackers try. Choose another one.';

/** The original's named format presets. */
const FORMAT_TESTS: Record<string, (v: string) => boolean> = {
  alpha: (v) => /^[A-Za-z]+$/.test(v),
  alphaExtended: (v) => /^\p{L}+$/u.test(v),
  alphaExtendedSpaces: (v) => /^[\p{L} ]+$/u.test(v),
  alphaNumeric: (v) => /^[A-Za-z0-9]+$/.test(v),
  alphaNumericExtended: (v) => /^[\p{L}\p{N}]+$/u.test(v),
  email: isValidEmail,
  numeric: (v) => /^\d+$/.test(v),
  numericReal: (v) => /^-?\d+(\.\d+)?$/.test(v),
  phone: (v) => /^[0-9()+\-. ]{7,20}$/.test(v),
  phoneInternational: (v) => /^\+[1-9][0-9 ()\-.]{6,20}$/.test(v),
  zipCode: (v) => /^\d{5}$/.test(v),
  'zipCode+4': (v) => /^\d{5}-\d{4}$/.test(v),
};

/** Longest value of a field that sets no maxLength of its own. */
export const DEFAULT_MAX_LENGTH = 1000;
const INVALID_DATE = '#invalid-date';
// C0 controls other than tab, newline and carriage return, and DEL
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

export interface ValidationContext {
  /** False when another record of the application already holds `value` for `attribute`. */
  isUnique(attribute: string, value: string): Promise<boolean>;
  /** The application's rules for a new password, beside the flow's (docs/passwords.md). */
  password?: NewPasswordRules;
}

/**
 * What the service asks of every new password, whatever the flow version says: not a commonly used
 * one, and, when the application sets it, a length of its own in place of the flow's minLength
 * (raised by `password_min_length`, or lowered for an account with a second factor). Messages in
 * the flow's locale; a flow's own `notCommon` message comes first.
 */
export interface NewPasswordRules {
  minLength?: number;
  /** Says a password is shorter than `n` characters. */
  tooShort(n: number): string;
  /** Says a password is a commonly used one. */
  common: string;
}

/** A field that sets the account's password: its rules are the service's too (NewPasswordRules). */
const setsPassword = (field: FlowField) => field.type === 'password' && field.schemaAttribute === 'password';

export interface FormResult {
  /** Submitted values by field name (dates as YYYY-MM-DD); absent fields are absent. */
  values: Record<string, string>;
  /** Localized messages by field name; empty when the form is valid. */
  invalid: Record<string, string[]>;
}

export interface CompiledForm {
  name: string;
  fields: { name: string; required: boolean; field: FlowField }[];
  validate(body: Record<string, string>, context: ValidationContext, prefill?: Record<string, string>): Promise<FormResult>;
}

function ageInYears(date: string, now: Date): number {
  const [y, m, d] = date.split('-').map(Number);
  let age = now.getUTCFullYear() - y;
  if (now.getUTCMonth() + 1 < m || (now.getUTCMonth() + 1 === m && now.getUTCDate() < d)) age--;
  return age;
}

/** A dateselect arrives as three parameters; '' when none was sent, INVALID_DATE when they make no date. */
function readDate(body: Record<string, string>, name: string): string | undefined {
  const parts = ['year', 'month', 'day'].map((p) => body[`${name}[dateselect_${p}]`]);
  if (parts.every((p) => p === undefined)) return body[name] === undefined ? undefined : '';
  if (parts.every((p) => p === undefined || p === '')) return ''; // sent empty: clears the date
  if (!parts.every((p) => p !== undefined && /^\d{1,4}$/.test(p))) return INVALID_DATE;
  const [y, m, d] = parts.map(Number);
  const date = new Date(Date.UTC(y, m - 1, d));
  if (y < 1000 || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d) return INVALID_DATE;
  return `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

/** One field's schema: every rule of the flow, with the locale's message. */
function fieldSchema(name: string, field: FlowField, required: boolean, text: (key: string) => string, now: () => Date): yup.StringSchema<string | undefined> {
  let s = yup.string().test('characters', text('errors.invalidCharacters'), (v) => !v || !CONTROL.test(v));
  const rules = field.validation ?? [];
  const rule = (kind: FlowRule['rule']) => rules.find((r) => r.rule === kind);
  // a confirmation must equal a field that has its own rules: no cap of its own
  if (!rule('maxLength') && !rule('match')) s = s.test('tooLong', text('errors.tooLong'), (v) => !v || v.length <= DEFAULT_MAX_LENGTH);
  if (field.type === 'dateselect') s = s.test('date', text('errors.invalidDate'), (v) => v !== INVALID_DATE);
  if (field.options) {
    const allowed = new Set(field.options.map((o) => o.value));
    s = s.test('option', text('errors.invalidOption'), (v) => !v || allowed.has(v));
  }
  if (setsPassword(field)) {
    const own = rule('notCommon');
    const flowMin = Number(rule('minLength')?.value ?? 0);
    s = s.test('password', function (v) {
      if (v === undefined || v === '') return true;
      const rules = (this.options.context as ValidationContext | undefined)?.password;
      const min = rules?.minLength;
      if (min !== undefined && [...v].length < min) return this.createError({ message: rules!.tooShort(min) });
      // too short for the flow: that is the one thing to say
      if (min === undefined && [...v].length < flowMin) return true;
      // a flow that asks for less than the service's floor still gets the floor
      if (rules && [...v].length < LOWEST_MIN_LENGTH) return this.createError({ message: rules.tooShort(LOWEST_MIN_LENGTH) });
      if (isCommonPassword(v)) return this.createError({ message: own ? text(own.message) : rules?.common ?? COMMON_PASSWORD });
      return true;
    });
  }
  for (const r of rules) {
    const message = text(r.message);
    const present = (v: string | undefined): v is string => v !== undefined && v !== '' && v !== INVALID_DATE;
    switch (r.rule) {
      case 'required':
        if (required) s = s.test('required', message, (v) => v !== undefined && v.trim() !== '');
        break;
      case 'minLength':
        s = s.test('minLength', message, function (v) {
          // the application's length for a new password replaces the flow's
          if (setsPassword(field) && (this.options.context as ValidationContext | undefined)?.password?.minLength !== undefined) return true;
          return !present(v) || [...v].length >= Number(r.value);
        });
        break;
      case 'notCommon':
        // checked with the service's rules above, with this message
        break;
      case 'maxLength':
        s = s.test('maxLength', message, (v) => !present(v) || [...v].length <= Number(r.value));
        break;
      case 'format':
        s = s.test('format', message, (v) => !present(v) || FORMAT_TESTS[String(r.value)](v));
        break;
      case 'match':
        s = s.test('match', message, function (v) {
          return !present(v) || v === (this.parent as Record<string, unknown>)[String(r.value)];
        });
        break;
      case 'minYears':
        s = s.test('minYears', message, (v) => !present(v) || ageInYears(v, now()) >= Number(r.value));
        break;
      case 'unique':
        s = s.test('unique', message, async function (v) {
          if (!present(v) || !field.schemaAttribute) return true;
          return (this.options.context as ValidationContext).isUnique(field.schemaAttribute, v);
        });
        break;
    }
  }
  return s.label(name);
}

/**
 * Compiles one form of one flow version for one locale into a yup schema. The result is cached by
 * the caller (flow versions are immutable), so no request parses a flow again.
 */
export function compileForm(flow: FlowDefinition, formName: string, locale: string, now: () => Date = () => new Date()): CompiledForm | undefined {
  const form = flow.forms[formName];
  if (!form) return undefined;
  const text = (key: string) => flow.translations[key]?.values[locale] ?? flow.translations[key]?.values['en-US'] ?? key;
  const fields = form.fields.map((f) => ({ name: f.name, required: f.required, field: flow.fields[f.name] }));
  const schema = yup.object(Object.fromEntries(fields.map((f) => [f.name, fieldSchema(f.name, f.field, f.required, text, now)])));

  return {
    name: formName,
    fields,
    async validate(body, context, prefill = {}) {
      const values: Record<string, string> = {};
      for (const { name, field } of fields) {
        const sent = field.type === 'dateselect' ? readDate(body, name) : body[name];
        // a field not sent keeps the stored value; one sent empty clears it (or fails `required`)
        const value = sent === undefined ? prefill[name] : sent;
        if (value !== undefined) values[name] = value;
      }
      try {
        await schema.validate(values, { abortEarly: false, context, strict: true });
        return { values, invalid: {} };
      } catch (e) {
        if (!(e instanceof yup.ValidationError)) throw e;
        const invalid: Record<string, string[]> = {};
        for (const failure of e.inner.length ? e.inner : [e]) {
          const path = failure.path ?? formName;
          (invalid[path] ??= []).push(...failure.errors);
        }
        return { values, invalid };
      }
    },
  };
}

/** Compiled forms by (application, flow, version, locale, form); bounded. */
export function createFormCache(max = 2000) {
  const cache = new Map<string, CompiledForm | undefined>();
  return (key: string, make: () => CompiledForm | undefined): CompiledForm | undefined => {
    if (cache.has(key)) return cache.get(key);
    const made = make();
    if (cache.size >= max) cache.delete(cache.keys().next().value as string);
    cache.set(key, made);
    return made;
  };
}
