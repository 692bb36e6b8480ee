import { isFilterText, operatorRoleOf, prefixFilter, roleMay } from '../../src/domain/operators';
import { parseFilter, printFilter } from '../../src/domain/filter';

// docs/console.md: what each operator role may do, and how the console reads a search.

it('each role may do what the roles before it may, and no more', () => {
  expect(['read', 'account', 'administer'].map((a) => roleMay('viewer', a as never))).toEqual([true, false, false]);
  expect(['read', 'account', 'administer'].map((a) => roleMay('support', a as never))).toEqual([true, true, false]);
  expect(['read', 'account', 'administer'].map((a) => roleMay('admin', a as never))).toEqual([true, true, true]);
});

it('a role is one of the three, in the record\'s attribute; anything else there is none', () => {
  expect(operatorRoleOf({ attributes: { operatorRole: 'support' } })).toBe('support');
  for (const v of ['Admin', 'root', '', 1, ['admin'], null, undefined]) expect(operatorRoleOf({ attributes: { operatorRole: v } })).toBeUndefined();
});

it('a text with a comparison or a null test is a filter; any other a prefix', () => {
  for (const f of ["email = 'a@b.c'", 'created > 1', 'emailVerified is null', 'x IS NOT NULL']) expect(isFilterText(f)).toBe(true);
  for (const p of ['ada', 'ada@exa', 'Lovelace', 'is nullable']) expect(isFilterText(p)).toBe(false);
});

it('an address prefix looks at the email alone; a name at the email, the username and the names, as typed, lower-case and capitalized', () => {
  expect(printFilter(prefixFilter('Ada@Ex'))).toBe(printFilter(parseFilter(
    "email >= 'Ada@Ex' and email < 'Ada@Ey' or email >= 'ada@ex' and email < 'ada@ey'",
  )));
  const name = printFilter(prefixFilter('love'));
  for (const a of ['email', 'username', 'givenName', 'familyName', 'displayName']) {
    expect(name).toContain(`${a} >= 'love' and ${a} < 'lovf'`);
    expect(name).toContain(`${a} >= 'Love' and ${a} < 'Lovf'`);
  }
  // the range's end after a character outside the basic plane, and a quote kept inside the string
  expect(printFilter(prefixFilter("o'\u{1F600}"))).toContain("< 'o''\u{1F601}'");
});
