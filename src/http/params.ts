import { errors } from '../errors';

/** Longest value any single parameter may have; longer ones are refused before any work. */
export const MAX_PARAM_LENGTH = 16_384;

/**
 * The request's parameters, from the sources the route reads (see routes.ts). Values are the
 * decoded strings as sent; a parameter sent twice or with an over-long value is refused.
 */
export class Params {
  constructor(readonly values: Readonly<Record<string, string>>) {}

  static from(sources: Record<string, unknown>[]): Params {
    const merged: Record<string, string> = {};
    for (const source of sources) {
      for (const [key, value] of Object.entries(source ?? {})) {
        if (typeof value !== 'string' || key in merged) {
          throw errors.invalidArgument(key, 'was sent more than once; send each parameter once');
        }
        if (value.length > MAX_PARAM_LENGTH) {
          throw errors.invalidArgument(key, `is longer than ${MAX_PARAM_LENGTH} characters`);
        }
        merged[key] = value;
      }
    }
    return new Params(merged);
  }

  /** The value, or undefined when absent or empty. */
  get(name: string): string | undefined {
    const v = this.values[name];
    return v === undefined || v === '' ? undefined : v;
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
