/**
 * What a request's names and values may hold (docs/hardening.md#what-a-request-may-hold): no NUL
 * and no other control character (tab, line feed and carriage return excepted), nothing longer than
 * MAX_PARAM_LENGTH. No identifier, code, token or form field ever holds one, and a NUL is where
 * database drivers and engines part ways (one cuts the text, another fails): refused at the edge,
 * every engine gives the same answer.
 */

/** Longest value any single parameter may have; longer ones are refused before any work. */
export const MAX_PARAM_LENGTH = 16_384;

/** C0 control characters and DEL, except tab, line feed and carriage return. */
export const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/;

/** What is wrong with one name or value, or undefined. */
export function valueProblem(value: string): string | undefined {
  if (value.length > MAX_PARAM_LENGTH) return `is longer than ${MAX_PARAM_LENGTH} characters`;
  if (CONTROL.test(value)) return value.includes('\u0000') ? 'contains a NUL character; remove it' : 'contains a control character; remove it';
  return undefined;
}

/** The first unsafe name or value of a parsed query or form (strings, or lists of them), as [name, why]. */
export function unsafeField(fields: unknown): [string, string] | undefined {
  if (typeof fields !== 'object' || fields === null) return undefined;
  for (const [name, value] of Object.entries(fields)) {
    const nameProblem = valueProblem(name);
    if (nameProblem) return ['parameter name', nameProblem];
    for (const v of Array.isArray(value) ? value : [value]) {
      const problem = typeof v === 'string' ? valueProblem(v) : undefined;
      if (problem) return [name.slice(0, 64), problem];
    }
  }
  return undefined;
}
