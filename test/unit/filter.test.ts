import fc from 'fast-check';
import { FilterError, parseFilter, printFilter, type Filter } from '../../src/domain/filter';

const attribute = fc.constantFrom('email', 'displayName', 'primaryAddress.country', 'profiles.identifier', 'lastUpdated', 'id', 'x_1');
const literal = fc.oneof(fc.string({ maxLength: 12 }), fc.integer({ min: -1e9, max: 1e9 }), fc.boolean());
const filter: fc.Arbitrary<Filter> = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ kind: fc.constant('compare' as const), op: fc.constantFrom('=', '!=', '>', '>=', '<', '<=' as const), attribute, value: literal }),
    fc.record({ kind: fc.constant('null' as const), attribute, negated: fc.boolean() }),
    fc.record({ kind: fc.constantFrom('and' as const, 'or' as const), left: tie('node') as fc.Arbitrary<Filter>, right: tie('node') as fc.Arbitrary<Filter> }),
    fc.record({ kind: fc.constant('not' as const), operand: tie('node') as fc.Arbitrary<Filter> }),
  ),
})).node as fc.Arbitrary<Filter>;

describe('the filter language', () => {
  it('precedence: is null, not, relational, equality, and, or', () => {
    expect(parseFilter("a = 'x' or b = 'y' and c is not null")).toEqual({
      kind: 'or',
      left: { kind: 'compare', op: '=', attribute: 'a', value: 'x' },
      right: { kind: 'and', left: { kind: 'compare', op: '=', attribute: 'b', value: 'y' }, right: { kind: 'null', attribute: 'c', negated: true } },
    });
    expect(parseFilter('not email is null')).toEqual({ kind: 'not', operand: { kind: 'null', attribute: 'email', negated: false } });
    expect(parseFilter("!(displayName = 'O''Brien') AND id >= 10")).toEqual({
      kind: 'and',
      left: { kind: 'not', operand: { kind: 'compare', op: '=', attribute: 'displayName', value: "O'Brien" } },
      right: { kind: 'compare', op: '>=', attribute: 'id', value: 10 },
    });
    // a value on the left: the comparison is mirrored
    expect(parseFilter("'2026-01-01' < lastUpdated")).toEqual({ kind: 'compare', op: '>', attribute: 'lastUpdated', value: '2026-01-01' });
  });

  it.each([
    ['', 1, 'empty'],
    ["email = 'x", 9, 'not closed'],
    ['email =', 8, 'expected an attribute'],
    ["(email = 'x'", 13, 'expected ")"'],
    ["email = 'x' extra", 13, 'unexpected'],
    ['email', 1, 'needs a comparison'],
    ["email = displayName", 1, 'compares an attribute with a value'],
    ['email is 5', 10, 'expected null'],
    ["email ~ 'x'", 7, 'unexpected character'],
  ])('%j is refused at position %i', (text, position, message) => {
    let error: unknown;
    try {
      parseFilter(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FilterError);
    expect((error as FilterError).position).toBe(position);
    expect((error as FilterError).message).toContain(message);
  });

  it('every tree prints to text that parses back to the same tree', () => {
    fc.assert(fc.property(filter, (f) => expect(parseFilter(printFilter(f))).toEqual(f)), { numRuns: 2000 });
  });

  it('any text either parses or fails with a position inside it (never another error)', () => {
    fc.assert(fc.property(fc.string({ maxLength: 60 }), (text) => {
      try {
        parseFilter(text);
      } catch (e) {
        expect(e).toBeInstanceOf(FilterError);
        expect((e as FilterError).position).toBeGreaterThanOrEqual(1);
        expect((e as FilterError).position).toBeLessThanOrEqual(text.length + 1);
      }
    }), { numRuns: 5000 });
  });
});
