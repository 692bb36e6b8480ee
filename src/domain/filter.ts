/**
 * The original service's filter language for entity.find and entity.count, parsed into a tree
 * (src/db/entity-filter.ts turns the tree into parameterized SQL). Precedence, highest first:
 * `is null` / `is not null` (postfix), `not` / `!` (prefix), `>` `>=` `<` `<=`, `=` `!=`, `and`,
 * `or`; parentheses group. A comparison has an attribute on one side and a literal on the other:
 * a string in single quotes (`''` is a quote inside it), an integer, or true/false.
 */
export type Literal = string | number | boolean;
export type Comparison = '=' | '!=' | '>' | '>=' | '<' | '<=';

export type Filter =
  | { kind: 'and' | 'or'; left: Filter; right: Filter }
  | { kind: 'not'; operand: Filter }
  | { kind: 'compare'; op: Comparison; attribute: string; value: Literal }
  | { kind: 'null'; attribute: string; negated: boolean };

/** A filter that cannot be parsed; `position` is the 1-based character where it went wrong. */
export class FilterError extends Error {
  constructor(readonly position: number, what: string) {
    super(`${what} at position ${position}`);
  }
}

/** A filter or sort that names something it cannot use (a password, a timestamp that is not one), found where it is compiled. */
export class FilterUseError extends Error {
  constructor(message: string, readonly part: 'filter' | 'sort' = 'filter') {
    super(message);
  }
}

export const MAX_FILTER_LENGTH = 4096;
/** Comparisons and `is null` tests in one filter: each is evaluated on every candidate record. */
export const MAX_FILTER_TERMS = 100;
/** Parentheses inside one another. */
export const MAX_FILTER_DEPTH = 16;

type Token =
  | { t: 'attr'; v: string; at: number }
  | { t: 'lit'; v: Literal; at: number }
  | { t: 'op'; v: Comparison; at: number }
  | { t: 'kw'; v: 'and' | 'or' | 'not' | 'is' | 'null'; at: number }
  | { t: '(' | ')' | 'end'; at: number };

const ATTRIBUTE = /[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*/y;
const INTEGER = /-?\d{1,15}(?![\w.])/y;
const KEYWORDS = new Set(['and', 'or', 'not', 'is', 'null']);

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const at = () => i + 1;
  while (i < text.length) {
    const c = text[i];
    if (/\s/.test(c)) { i++; continue; }
    if (c === '(' || c === ')') { tokens.push({ t: c, at: at() }); i++; continue; }
    if (c === "'") {
      const start = at();
      let value = '';
      for (i++; ; i++) {
        if (i >= text.length) throw new FilterError(start, 'a string is not closed');
        if (text[i] === "'") {
          if (text[i + 1] === "'") { value += "'"; i++; continue; }
          i++;
          break;
        }
        value += text[i];
      }
      tokens.push({ t: 'lit', v: value, at: start });
      continue;
    }
    const two = text.slice(i, i + 2);
    if (two === '>=' || two === '<=' || two === '!=') { tokens.push({ t: 'op', v: two, at: at() }); i += 2; continue; }
    if (c === '>' || c === '<' || c === '=') { tokens.push({ t: 'op', v: c, at: at() }); i++; continue; }
    if (c === '!') { tokens.push({ t: 'kw', v: 'not', at: at() }); i++; continue; }
    INTEGER.lastIndex = i;
    const number = INTEGER.exec(text);
    if (number) { tokens.push({ t: 'lit', v: Number(number[0]), at: at() }); i += number[0].length; continue; }
    ATTRIBUTE.lastIndex = i;
    const word = ATTRIBUTE.exec(text);
    if (word) {
      const lower = word[0].toLowerCase();
      if (KEYWORDS.has(lower)) tokens.push({ t: 'kw', v: lower as 'and', at: at() });
      else if (lower === 'true' || lower === 'false') tokens.push({ t: 'lit', v: lower === 'true', at: at() });
      else tokens.push({ t: 'attr', v: word[0], at: at() });
      i += word[0].length;
      continue;
    }
    throw new FilterError(at(), `unexpected character ${JSON.stringify(c)}`);
  }
  tokens.push({ t: 'end', at: text.length + 1 });
  return tokens;
}

/** An operand before it is known to be a condition: an attribute or a literal may still be compared. */
type Operand = { kind: 'attribute'; name: string; at: number } | { kind: 'literal'; value: Literal; at: number } | { kind: 'condition'; filter: Filter; at: number };

const MIRROR: Record<Comparison, Comparison> = { '=': '=', '!=': '!=', '>': '<', '>=': '<=', '<': '>', '<=': '>=' };

/**
 * Parses a filter; throws FilterError naming the position of the first problem. A recursive-descent
 * parser whose rules share one cursor over the tokens: its length is the grammar's (docs/entity-filters.md).
 */
export function parseFilter(text: string): Filter {
  if (text.length > MAX_FILTER_LENGTH) throw new FilterError(MAX_FILTER_LENGTH, `a filter is at most ${MAX_FILTER_LENGTH} characters`);
  const tokens = tokenize(text);
  let p = 0;
  let depth = 0;
  const peek = () => tokens[p];
  const isKw = (v: string) => { const t = peek(); return t.t === 'kw' && t.v === v; };
  const describe = (t: Token) => (t.t === 'end' ? 'the end of the filter' : t.t === 'attr' || t.t === 'lit' || t.t === 'op' || t.t === 'kw' ? JSON.stringify(String(t.v)) : `"${t.t}"`);

  const condition = (o: Operand): Filter => {
    if (o.kind === 'condition') return o.filter;
    throw new FilterError(o.at, o.kind === 'attribute' ? `attribute ${o.name} needs a comparison or "is null"` : 'a value needs an attribute to compare with');
  };

  // or → and → equality → relational → not → postfix → primary
  function joined(kind: 'and' | 'or', next: () => Operand): Operand {
    let left = next();
    while (isKw(kind)) {
      p++;
      left = { kind: 'condition', filter: { kind, left: condition(left), right: condition(next()) }, at: left.at };
    }
    return left;
  }
  const or = (): Operand => joined('or', and);
  const and = (): Operand => joined('and', equality);
  const compare = (left: Operand, op: Comparison, right: Operand): Operand => {
    if (left.kind === 'attribute' && right.kind === 'literal') return { kind: 'condition', filter: { kind: 'compare', op, attribute: left.name, value: right.value }, at: left.at };
    if (left.kind === 'literal' && right.kind === 'attribute') return { kind: 'condition', filter: { kind: 'compare', op: MIRROR[op], attribute: right.name, value: left.value }, at: left.at };
    throw new FilterError(left.at, `"${op}" compares an attribute with a value`);
  };
  function comparisons(next: () => Operand, ops: Comparison[]): Operand {
    let left = next();
    for (let t = peek(); t.t === 'op' && ops.includes(t.v); t = peek()) {
      p++;
      left = compare(left, t.v, next());
    }
    return left;
  }
  const equality = () => comparisons(relational, ['=', '!=']);
  function relational(): Operand {
    return comparisons(negation, ['>', '>=', '<', '<=']);
  }
  function negation(): Operand {
    if (isKw('not')) {
      const at = peek().at;
      p++;
      // a run of nots nests nothing in SQL (double negations cancel): only parentheses count as depth
      const operand = negation();
      return { kind: 'condition', filter: { kind: 'not', operand: condition(operand) }, at };
    }
    return postfix();
  }
  function postfix(): Operand {
    let operand = primary();
    while (isKw('is')) {
      const at = peek().at;
      p++;
      const negated = isKw('not');
      if (negated) p++;
      if (!isKw('null')) throw new FilterError(peek().at, `expected null after "is${negated ? ' not' : ''}", found ${describe(peek())}`);
      p++;
      if (operand.kind !== 'attribute') throw new FilterError(at, '"is null" follows an attribute');
      operand = { kind: 'condition', filter: { kind: 'null', attribute: operand.name, negated }, at: operand.at };
    }
    return operand;
  }
  let terms = 0;
  const term = (at: number) => {
    if (++terms > MAX_FILTER_TERMS) throw new FilterError(at, `a filter has at most ${MAX_FILTER_TERMS} comparisons and "is null" tests`);
  };
  function primary(): Operand {
    const t = peek();
    if (t.t === 'attr') { p++; term(t.at); return { kind: 'attribute', name: t.v, at: t.at }; }
    if (t.t === 'lit') { p++; return { kind: 'literal', value: t.v, at: t.at }; }
    if (t.t === '(') {
      p++;
      if (++depth > MAX_FILTER_DEPTH) throw new FilterError(t.at, `the filter nests parentheses more than ${MAX_FILTER_DEPTH} deep`);
      const inner = or();
      depth--;
      if (peek().t !== ')') throw new FilterError(peek().at, `expected ")" to close the "(" at position ${t.at}, found ${describe(peek())}`);
      p++;
      return { kind: 'condition', filter: condition(inner), at: t.at };
    }
    throw new FilterError(t.at, `expected an attribute, a value or "(", found ${describe(t)}`);
  }

  if (peek().t === 'end') throw new FilterError(1, 'the filter is empty');
  const result = condition(or());
  if (peek().t !== 'end') throw new FilterError(peek().at, `unexpected ${describe(peek())}`);
  return result;
}

const quote = (v: Literal) => (typeof v === 'string' ? `'${v.replace(/'/g, "''")}'` : String(v));

/** The filter as text that parses back to the same tree (fully parenthesized). */
export function printFilter(f: Filter): string {
  switch (f.kind) {
    case 'and':
    case 'or': return `(${printFilter(f.left)} ${f.kind} ${printFilter(f.right)})`;
    case 'not': return `not (${printFilter(f.operand)})`;
    case 'null': return `${f.attribute} is ${f.negated ? 'not ' : ''}null`;
    case 'compare': return `${f.attribute} ${f.op} ${quote(f.value)}`;
  }
}

