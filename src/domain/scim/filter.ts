/**
 * SCIM filters (RFC 7644 §3.4.2.2) and PATCH paths (§3.5.2): parsed by the RFC's grammar into a
 * tree, and evaluated against a resource as JSON. Attribute names compare case-insensitively; an
 * attribute may be named with its schema's URN (`urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber`).
 *
 *   FILTER    = attrExp / logExp / valuePath / *1"not" "(" FILTER ")"
 *   valuePath = attrPath "[" valFilter "]"
 *   attrExp   = (attrPath SP "pr") / (attrPath SP compareOp SP compValue)
 *   logExp    = FILTER SP ("and" / "or") SP FILTER          ("and" binds tighter)
 *   compValue = false / null / true / number / string
 *   PATH      = attrPath / valuePath [subAttr]
 */

export const COMPARE_OPS = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le'] as const;
export type CompareOp = (typeof COMPARE_OPS)[number];
export type FilterValue = string | number | boolean | null;

/** An attribute: its schema's URN when it was named with one, its name, and a sub-attribute (names lower-cased). */
export interface AttrPath { schema?: string; attr: string; sub?: string }

export type Filter =
  | { op: 'and' | 'or'; left: Filter; right: Filter }
  | { op: 'not'; filter: Filter }
  | { op: 'pr'; path: AttrPath }
  | { op: CompareOp; path: AttrPath; value: FilterValue }
  | { op: 'valuePath'; path: AttrPath; filter: Filter };

/** A PATCH operation's path: an attribute, or the values of a multi-valued one a filter selects (and one of their sub-attributes). */
export interface PatchPath { path: AttrPath; filter?: Filter; sub?: string }

/** A filter or path that is not the RFC's grammar: SCIM's `invalidFilter` (or `invalidPath`). */
export class FilterSyntaxError extends Error {}

/** The longest filter read (a directory's filters are a few dozen characters). */
export const MAX_FILTER_LENGTH = 4096;
/** How deep parentheses and brackets nest. */
const MAX_DEPTH = 32;

type Token =
  | { kind: 'word'; text: string; at: number }
  | { kind: 'string'; value: string; at: number }
  | { kind: 'number'; value: number; at: number }
  | { kind: '(' | ')' | '[' | ']'; at: number };

const DELIMITERS = new Set(['(', ')', '[', ']']);

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
    } else if (DELIMITERS.has(c)) {
      tokens.push({ kind: c as '(' | ')' | '[' | ']', at: i });
      i++;
    } else if (c === '"') {
      // a JSON string: its escapes as JSON reads them
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (j >= text.length) throw new FilterSyntaxError(`the string at character ${i + 1} is not closed with "`);
      let value: unknown;
      try {
        value = JSON.parse(text.slice(i, j + 1));
      } catch {
        throw new FilterSyntaxError(`the string at character ${i + 1} has an escape JSON does not know`);
      }
      tokens.push({ kind: 'string', value: value as string, at: i });
      i = j + 1;
    } else {
      let j = i;
      while (j < text.length && !DELIMITERS.has(text[j]) && !/\s/.test(text[j]) && text[j] !== '"') j++;
      const word = text.slice(i, j);
      if (/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(word)) tokens.push({ kind: 'number', value: Number(word), at: i });
      else tokens.push({ kind: 'word', text: word, at: i });
      i = j;
    }
  }
  return tokens;
}

const ATTRNAME = /^[A-Za-z$][\w$-]*$/;

/** An attribute path's text (`name`, `name.givenName`, `urn:…:User:employeeNumber`, `urn:…:User:manager.value`). */
export function attrPathOf(text: string): AttrPath {
  let schema: string | undefined;
  let rest = text;
  if (/^urn:/i.test(text)) {
    const colon = text.lastIndexOf(':');
    schema = text.slice(0, colon).toLowerCase();
    rest = text.slice(colon + 1);
  }
  const parts = rest.split('.');
  if (parts.length > 2 || parts.some((p) => !ATTRNAME.test(p))) throw new FilterSyntaxError(`${JSON.stringify(text.slice(0, 80))} is not an attribute name`);
  return { ...(schema !== undefined && { schema }), attr: parts[0].toLowerCase(), ...(parts[1] !== undefined && { sub: parts[1].toLowerCase() }) };
}

class Parser {
  private i = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token | undefined {
    return this.tokens[this.i];
  }

  private word(t: Token | undefined): string | undefined {
    return t?.kind === 'word' ? t.text.toLowerCase() : undefined;
  }

  private expect(kind: Token['kind']): Token {
    const t = this.tokens[this.i++];
    if (!t || t.kind !== kind) throw new FilterSyntaxError(t ? `expected ${kind} at character ${t.at + 1}` : `the filter ends where ${kind} was expected`);
    return t;
  }

  done(): boolean {
    return this.i >= this.tokens.length;
  }

  rest(): Token | undefined {
    return this.peek();
  }

  /** FILTER, with `or` of `and`s. */
  filter(): Filter {
    let left = this.conjunction();
    while (this.word(this.peek()) === 'or') {
      this.i++;
      left = { op: 'or', left, right: this.conjunction() };
    }
    return left;
  }

  private conjunction(): Filter {
    let left = this.unary();
    while (this.word(this.peek()) === 'and') {
      this.i++;
      left = { op: 'and', left, right: this.unary() };
    }
    return left;
  }

  private nested<T>(read: () => T): T {
    if (++this.depth > MAX_DEPTH) throw new FilterSyntaxError(`the filter nests deeper than ${MAX_DEPTH}`);
    try {
      return read();
    } finally {
      this.depth--;
    }
  }

  private unary(): Filter {
    const t = this.peek();
    if (!t) throw new FilterSyntaxError('the filter ends where an expression was expected');
    if (this.word(t) === 'not' && this.tokens[this.i + 1]?.kind === '(') {
      this.i++;
      return { op: 'not', filter: this.group() };
    }
    if (t.kind === '(') return this.group();
    return this.attrExp();
  }

  private group(): Filter {
    this.expect('(');
    const inner = this.nested(() => this.filter());
    this.expect(')');
    return inner;
  }

  private attrExp(): Filter {
    const t = this.tokens[this.i++];
    if (!t || t.kind !== 'word') throw new FilterSyntaxError(t ? `expected an attribute name at character ${t.at + 1}` : 'the filter ends where an attribute was expected');
    const path = attrPathOf(t.text);
    if (this.peek()?.kind === '[') {
      if (path.sub !== undefined) throw new FilterSyntaxError(`${t.text} names a sub-attribute before [`);
      this.i++;
      const inner = this.nested(() => this.filter());
      this.expect(']');
      return { op: 'valuePath', path, filter: inner };
    }
    const opToken = this.tokens[this.i++];
    const op = this.word(opToken);
    if (op === 'pr') return { op: 'pr', path };
    if (op === undefined || !(COMPARE_OPS as readonly string[]).includes(op)) {
      throw new FilterSyntaxError(opToken ? `expected an operator (${COMPARE_OPS.join(', ')} or pr) at character ${opToken.at + 1}` : `the filter ends after ${t.text}: an operator was expected`);
    }
    const v = this.tokens[this.i++];
    let value: FilterValue;
    if (v?.kind === 'string' || v?.kind === 'number') value = v.value;
    else if (this.word(v) === 'true') value = true;
    else if (this.word(v) === 'false') value = false;
    else if (this.word(v) === 'null') value = null;
    else throw new FilterSyntaxError(v ? `expected a value (a "string", a number, true, false or null) at character ${v.at + 1}` : `the filter ends after ${op}: a value was expected`);
    return { op: op as CompareOp, path, value };
  }

  /** PATH: attrPath, or valuePath with an optional `.subAttr` after its bracket. */
  patchPath(text: string): PatchPath {
    const t = this.tokens[this.i++];
    if (!t || t.kind !== 'word') throw new FilterSyntaxError('the path does not begin with an attribute name');
    const path = attrPathOf(t.text);
    if (this.peek()?.kind !== '[') return { path };
    if (path.sub !== undefined) throw new FilterSyntaxError(`${t.text} names a sub-attribute before [`);
    this.i++;
    const filter = this.nested(() => this.filter());
    const close = this.expect(']');
    // what follows the bracket: `.subAttr`, as its own word
    const after = text.slice(close.at + 1);
    if (after.trim() === '') {
      this.i = this.tokens.length;
      return { path, filter };
    }
    const m = /^\.([A-Za-z$][\w$-]*)$/.exec(after.trim());
    if (!m) throw new FilterSyntaxError(`${JSON.stringify(after.slice(0, 40))} after ] is not a sub-attribute`);
    this.i = this.tokens.length;
    return { path, filter, sub: m[1].toLowerCase() };
  }
}

/** Parses a filter; FilterSyntaxError when it is not one. */
export function parseFilter(text: string): Filter {
  if (text.length > MAX_FILTER_LENGTH) throw new FilterSyntaxError(`the filter is longer than ${MAX_FILTER_LENGTH} characters`);
  const parser = new Parser(tokenize(text));
  if (parser.done()) throw new FilterSyntaxError('the filter is empty');
  const filter = parser.filter();
  const extra = parser.rest();
  if (extra) throw new FilterSyntaxError(`unexpected ${extra.kind === 'word' ? JSON.stringify(extra.text.slice(0, 40)) : extra.kind} at character ${extra.at + 1}`);
  return filter;
}

/** Parses a PATCH operation's path; FilterSyntaxError when it is not one. */
export function parsePatchPath(text: string): PatchPath {
  if (text.length > MAX_FILTER_LENGTH) throw new FilterSyntaxError(`the path is longer than ${MAX_FILTER_LENGTH} characters`);
  const parser = new Parser(tokenize(text));
  if (parser.done()) throw new FilterSyntaxError('the path is empty');
  return parser.patchPath(text);
}

/** The key of `obj` that is `name` regardless of case. */
export function keyOf(obj: Record<string, unknown>, name: string): string | undefined {
  const lower = name.toLowerCase();
  return Object.keys(obj).find((k) => k.toLowerCase() === lower);
}

export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Attributes compared as they are (every other string attribute compares regardless of case, as RFC 7643 defines most). */
const CASE_EXACT = new Set(['id', 'externalid']);

/** How a resource's schemas name its attributes: the core schema's are at the top, an extension's under its URN. */
export interface Schemas { core: string; extensions: readonly string[] }

/** The values an attribute path reaches in a resource: each element of a multi-valued attribute (or its sub-attribute). */
export function valuesAt(resource: Record<string, unknown>, path: AttrPath, schemas: Schemas): unknown[] {
  let holder: unknown = resource;
  if (path.schema !== undefined && path.schema !== schemas.core.toLowerCase()) {
    const key = keyOf(resource, path.schema);
    holder = key === undefined ? undefined : resource[key];
  }
  if (!isObject(holder)) return [];
  const key = keyOf(holder, path.attr);
  const top = key === undefined ? undefined : holder[key];
  const list = Array.isArray(top) ? top : top === undefined ? [] : [top];
  if (path.sub === undefined) return list;
  return list.flatMap((v) => {
    if (!isObject(v)) return [];
    const k = keyOf(v, path.sub!);
    const inner = k === undefined ? undefined : v[k];
    return Array.isArray(inner) ? inner : inner === undefined ? [] : [inner];
  });
}

const present = (v: unknown) => v !== null && v !== undefined && v !== '' && !(Array.isArray(v) && v.length === 0) && !(isObject(v) && Object.keys(v).length === 0);

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function compare(op: CompareOp, actual: unknown, expected: FilterValue, exact: boolean): boolean {
  // a complex value compares by its `value` (emails eq "a@b")
  if (isObject(actual)) {
    const k = keyOf(actual, 'value');
    return k !== undefined && compare(op, actual[k], expected, exact);
  }
  if (expected === null) return op === 'eq' ? !present(actual) : op === 'ne' ? present(actual) : false;
  if (actual === null || actual === undefined) return false;
  if (typeof expected === 'boolean') {
    if (typeof actual !== 'boolean') return false;
    if (op === 'eq') return actual === expected;
    if (op === 'ne') return actual !== expected;
    throw new FilterSyntaxError(`${op} does not compare booleans: use eq or ne`);
  }
  if (typeof expected === 'number') {
    if (typeof actual !== 'number') return false;
    switch (op) {
      case 'eq': return actual === expected;
      case 'ne': return actual !== expected;
      case 'gt': return actual > expected;
      case 'ge': return actual >= expected;
      case 'lt': return actual < expected;
      case 'le': return actual <= expected;
      default: throw new FilterSyntaxError(`${op} does not compare numbers`);
    }
  }
  if (typeof actual !== 'string') return false;
  if (!['co', 'sw', 'ew'].includes(op) && ISO_TIME.test(actual) && ISO_TIME.test(expected)) {
    // two times compare as times, whatever their precision or zone
    const a = Date.parse(actual);
    const b = Date.parse(expected);
    return op === 'eq' ? a === b : op === 'ne' ? a !== b : op === 'gt' ? a > b : op === 'ge' ? a >= b : op === 'lt' ? a < b : a <= b;
  }
  const a = exact ? actual : actual.toLowerCase();
  const b = exact ? expected : expected.toLowerCase();
  switch (op) {
    case 'eq': return a === b;
    case 'ne': return a !== b;
    case 'co': return a.includes(b);
    case 'sw': return a.startsWith(b);
    case 'ew': return a.endsWith(b);
    case 'gt': return a > b;
    case 'ge': return a >= b;
    case 'lt': return a < b;
    case 'le': return a <= b;
  }
}

/** Whether `resource` (or one value of a multi-valued attribute, within a value path) matches `filter`. */
export function matches(filter: Filter, resource: Record<string, unknown>, schemas: Schemas): boolean {
  switch (filter.op) {
    case 'and': return matches(filter.left, resource, schemas) && matches(filter.right, resource, schemas);
    case 'or': return matches(filter.left, resource, schemas) || matches(filter.right, resource, schemas);
    case 'not': return !matches(filter.filter, resource, schemas);
    case 'pr': return valuesAt(resource, filter.path, schemas).some(present);
    case 'valuePath': {
      // each value of the multi-valued attribute is the resource its filter reads (its sub-attributes at its top)
      const values = valuesAt(resource, filter.path, schemas);
      return values.some((v) => isObject(v) && matches(filter.filter, v, { core: '', extensions: [] }));
    }
    default: {
      const values = valuesAt(resource, filter.path, schemas);
      const exact = filter.path.sub === undefined && CASE_EXACT.has(filter.path.attr);
      // null: eq is "has no value", ne "has one" (as pr)
      if (filter.value === null) return filter.op === 'eq' ? !values.some(present) : filter.op === 'ne' ? values.some(present) : false;
      // ne: no value equals (an attribute with no value is "not equal")
      if (filter.op === 'ne') return !values.some((v) => compare('eq', v, filter.value, exact));
      return values.some((v) => compare(filter.op as CompareOp, v, filter.value, exact));
    }
  }
}

/** The terms a filter's top-level `and` requires: what a list may look up by index before reading the rest. */
export function requiredTerms(filter: Filter): Filter[] {
  return filter.op === 'and' ? [...requiredTerms(filter.left), ...requiredTerms(filter.right)] : [filter];
}
