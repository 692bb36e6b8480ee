import { CONTROL, MAX_PARAM_LENGTH } from '../domain/request-values';
import { errors } from '../errors';


/** Refuses an identifier holding a control character (a NUL, an escape, ...) with 200 invalid_argument. */
export function assertNoControl(argument: string, value: string): void {
  if (CONTROL.test(value)) throw errors.invalidArgument(argument.slice(0, 64), 'contains a control character; remove it');
}

/** Refuses a NUL anywhere: no parameter of any endpoint may hold one, and drivers cut text at it. */
function assertNoNul(argument: string, value: string): void {
  if (value.includes('\u0000')) throw errors.invalidArgument(argument.slice(0, 64), 'contains a NUL character; remove it');
}

/**
 * The request's parameters, from the sources the route reads (see routes.ts). Values are the
 * decoded strings as sent; a parameter sent twice, with an over-long value or with a NUL is
 * refused (other control characters are refused where identifiers are read, and by the flows'
 * form rules). The map has no prototype: `toString` or `constructor` are names like any
 * other.
 */
export class Params {
  constructor(readonly values: Readonly<Record<string, string>>) {}

  static from(sources: Record<string, unknown>[], maxLength = MAX_PARAM_LENGTH): Params {
    const merged: Record<string, string> = Object.create(null);
    for (const source of sources) {
      for (const [key, value] of Object.entries(source ?? {})) {
        assertNoNul('parameter name', key);
        if (typeof value !== 'string' || Object.hasOwn(merged, key)) {
          throw errors.invalidArgument(key, 'was sent more than once; send each parameter once');
        }
        if (value.length > maxLength) {
          throw errors.invalidArgument(key, `is longer than ${maxLength} characters`);
        }
        assertNoNul(key, value);
        merged[key] = value;
      }
    }
    return new Params(merged);
  }

  /** The value, or undefined when absent or empty. */
  get(name: string): string | undefined {
    const v = Object.hasOwn(this.values, name) ? this.values[name] : undefined;
    return v === undefined || v === '' ? undefined : v;
  }

  /** Whether the parameter was sent at all (even empty). */
  has(name: string): boolean {
    return Object.hasOwn(this.values, name);
  }

  require(name: string): string {
    const v = this.get(name);
    if (v === undefined) throw errors.missingArgument(name);
    return v;
  }

  /** Parses a parameter holding JSON text (features, attributes, transaction_state). */
  json(name: string, required: true): unknown;
  json(name: string, required?: false): unknown | undefined;
  json(name: string, required = false): unknown {
    const raw = required ? this.require(name) : this.get(name);
    if (raw === undefined) return undefined;
    try {
      return JSON.parse(raw);
    } catch {
      throw errors.invalidArgument(name, 'is not valid JSON');
    }
  }

  /** The parameters that go into a `Signature` string: all but the credentials themselves. */
  signed(): [string, string][] {
    return Object.entries(this.values).filter(([k]) => !UNSIGNED.has(k));
  }
}

const UNSIGNED = new Set(['client_id', 'client_secret', 'access_token']);
