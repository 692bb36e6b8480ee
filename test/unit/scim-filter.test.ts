import fc from 'fast-check';
import SCIMMY from 'scimmy';
import { FilterSyntaxError, matches, parseFilter, parsePatchPath, type AttrPath, type Filter, type FilterValue } from '../../src/domain/scim/filter';
import { applyPatch, ScimPatchError } from '../../src/domain/scim/patch';
import { readResource, SCHEMA } from '../../src/domain/scim/schemas';

// SCIM's filter grammar (RFC 7644 §3.4.2.2) and PATCH (§3.5.2), by properties: any filter written
// out parses back to itself; `and`, `or` and `not` mean what logic says on any resource; no input
// crashes the parser with anything but a FilterSyntaxError; and PATCH agrees with SCIMMY, an
// independent implementation, on the operations both define alike.

const USER_SCHEMAS = { core: SCHEMA.user, extensions: [SCHEMA.enterprise] };
const ENTERPRISE = SCHEMA.enterprise.toLowerCase();

const attrPath: fc.Arbitrary<AttrPath> = fc.oneof(
  fc.constantFrom('username', 'displayname', 'title', 'active', 'externalid', 'nickname').map((attr) => ({ attr })),
  fc.constantFrom('givenname', 'familyname').map((sub) => ({ attr: 'name', sub })),
  fc.constantFrom('value', 'type').map((sub) => ({ attr: 'emails', sub })),
  fc.constantFrom('department', 'employeenumber').map((attr) => ({ schema: ENTERPRISE, attr })),
);
const value: fc.Arbitrary<FilterValue> = fc.oneof(
  fc.string({ maxLength: 12 }), fc.constantFrom('work', 'Ada', 'ada@acme.example', 'a"b\\c', 'é'), fc.integer({ min: -1000, max: 1000 }), fc.boolean(), fc.constant(null),
);
const compareOp = fc.constantFrom('eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le') as fc.Arbitrary<'eq'>;

const { filter } = fc.letrec<{ filter: Filter; leaf: Filter; inner: Filter }>((tie) => ({
  leaf: fc.oneof(
    fc.record({ op: compareOp, path: attrPath, value }),
    attrPath.map((path) => ({ op: 'pr' as const, path })),
  ),
  // what a value path's filter reads: a value's own sub-attributes
  inner: fc.oneof(
    fc.record({ op: compareOp, path: fc.constantFrom('value', 'type', 'primary').map((attr) => ({ attr })), value }),
    fc.record({ op: fc.constantFrom('and' as const, 'or' as const), left: tie('leaf'), right: tie('leaf') }).map((f) => f as Filter),
  ),
  filter: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tie('leaf'),
    fc.record({ op: fc.constantFrom('and' as const, 'or' as const), left: tie('filter'), right: tie('filter') }).map((f) => f as Filter),
    tie('filter').map((f) => ({ op: 'not' as const, filter: f })),
    tie('inner').map((f) => ({ op: 'valuePath' as const, path: { attr: 'emails' }, filter: f })),
  ),
}));

/** A filter written out, each compound in parentheses (they vanish when read back). */
function written(f: Filter): string {
  const path = (p: AttrPath) => `${p.schema ? `${SCHEMA.enterprise}:` : ''}${p.attr}${p.sub ? `.${p.sub}` : ''}`;
  switch (f.op) {
    case 'and': case 'or': return `(${written(f.left)}) ${f.op} (${written(f.right)})`;
    case 'not': return `not (${written(f.filter)})`;
    case 'pr': return `${path(f.path)} pr`;
    case 'valuePath': return `${path(f.path)}[${written(f.filter)}]`;
    default: return `${path(f.path)} ${f.op.toUpperCase()} ${JSON.stringify(f.value)}`;
  }
}

const resource = fc.record({
  userName: fc.constantFrom('ada', 'Ada', 'grace@acme.example', 'x'),
  displayName: fc.option(fc.constantFrom('Ada Lovelace', 'work', ''), { nil: undefined }),
  title: fc.option(fc.string({ maxLength: 6 }), { nil: undefined }),
  active: fc.boolean(),
  name: fc.option(fc.record({ givenName: fc.constantFrom('Ada', 'Grace'), familyName: fc.string({ maxLength: 5 }) }), { nil: undefined }),
  emails: fc.array(fc.record({ value: fc.constantFrom('ada@acme.example', 'a"b\\c', 'x@y'), type: fc.constantFrom('work', 'home'), primary: fc.boolean() }), { maxLength: 3 }),
  [SCHEMA.enterprise]: fc.option(fc.record({ department: fc.constantFrom('Research', 'work'), employeeNumber: fc.constantFrom('1', '42') }), { nil: undefined }),
}).map((r) => JSON.parse(JSON.stringify(r)) as Record<string, unknown>);

/** Whether the resource matches, or the refusal (a comparison the grammar allows but the types do not, such as `active gt true`). */
const outcome = (f: Filter, r: Record<string, unknown>) => {
  try {
    return matches(f, r, USER_SCHEMAS);
  } catch (e) {
    if (e instanceof FilterSyntaxError) return 'refused';
    throw e;
  }
};

it('any filter written out reads back as itself, whatever the case of its operators', () => {
  fc.assert(fc.property(filter, (f) => {
    expect(parseFilter(written(f))).toEqual(f);
  }), { numRuns: 500 });
});

it('and binds tighter than or; not needs parentheses; a value path takes a sub-attribute only in a PATCH path', () => {
  expect(parseFilter('userName eq "a" or title pr and active eq true')).toEqual({
    op: 'or', left: { op: 'eq', path: { attr: 'username' }, value: 'a' },
    right: { op: 'and', left: { op: 'pr', path: { attr: 'title' } }, right: { op: 'eq', path: { attr: 'active' }, value: true } },
  });
  expect(parseFilter(`${SCHEMA.enterprise}:manager.value eq "x"`)).toEqual({ op: 'eq', path: { schema: ENTERPRISE, attr: 'manager', sub: 'value' }, value: 'x' });
  expect(parsePatchPath('emails[type eq "work"].value')).toEqual({ path: { attr: 'emails' }, filter: { op: 'eq', path: { attr: 'type' }, value: 'work' }, sub: 'value' });
  expect(parsePatchPath(`${SCHEMA.enterprise}:department`)).toEqual({ path: { schema: ENTERPRISE, attr: 'department' } });
  for (const bad of ['', 'userName', 'userName eq', 'not userName eq "a"', 'emails[type eq "work"].value eq "x"', '((((', 'a eq "x" b', 'a.b.c eq 1', 'userName eq "x"]', `${'('.repeat(40)}a pr${')'.repeat(40)}`]) {
    expect(() => parseFilter(bad)).toThrow(FilterSyntaxError);
  }
});

it('no text makes the parser fail with anything but a FilterSyntaxError', () => {
  const alphabet = fc.constantFrom(...'ab ()[]."\\:eqnorandtpr01-'.split(''));
  fc.assert(fc.property(fc.oneof(fc.string({ maxLength: 60 }), fc.array(alphabet, { maxLength: 60 }).map((c) => c.join(''))), (text) => {
    try {
      parseFilter(text);
    } catch (e) {
      expect(e).toBeInstanceOf(FilterSyntaxError);
    }
    try {
      parsePatchPath(text);
    } catch (e) {
      expect(e).toBeInstanceOf(FilterSyntaxError);
    }
  }), { numRuns: 2000 });
});

it('and, or and not mean what logic says on any resource', () => {
  fc.assert(fc.property(filter, filter, resource, (f, g, r) => {
    const a = outcome(f, r);
    const b = outcome(g, r);
    fc.pre(a !== 'refused' && b !== 'refused');
    expect(outcome({ op: 'not', filter: f }, r)).toBe(!a);
    expect(outcome({ op: 'and', left: f, right: g }, r)).toBe(a && b);
    expect(outcome({ op: 'or', left: f, right: g }, r)).toBe(a || b);
  }), { numRuns: 500 });
});

it('compares strings regardless of case (but ids), and the attribute names too', () => {
  const r = { userName: 'Ada', id: 'AbC', emails: [{ value: 'Ada@Acme.example', type: 'work' }], [SCHEMA.enterprise]: { department: 'Research' } };
  expect(matches(parseFilter('USERNAME eq "ada"'), r, USER_SCHEMAS)).toBe(true);
  expect(matches(parseFilter('id eq "abc"'), r, USER_SCHEMAS)).toBe(false);
  expect(matches(parseFilter('emails eq "ada@acme.example"'), r, USER_SCHEMAS)).toBe(true);
  expect(matches(parseFilter('emails[TYPE eq "WORK"]'), r, USER_SCHEMAS)).toBe(true);
  expect(matches(parseFilter(`${SCHEMA.user}:userName sw "A"`), r, USER_SCHEMAS)).toBe(true);
  expect(matches(parseFilter(`${SCHEMA.enterprise}:department ew "CH"`), r, USER_SCHEMAS)).toBe(true);
  expect(matches(parseFilter('title eq null and not (title pr)'), r, USER_SCHEMAS)).toBe(true);
});

// PATCH against SCIMMY: operations on single-valued attributes, sub-attributes and value filters
const simpleAttr = fc.constantFrom('displayName', 'title', 'nickName', 'userType', 'name.givenName', 'name.familyName');
const text = fc.constantFrom('Ada', 'Lovelace', 'Engineer', 'x y');
const operation = fc.oneof(
  fc.record({ op: fc.constantFrom('add', 'replace'), path: simpleAttr, value: text }),
  fc.record({ op: fc.constant('remove'), path: simpleAttr }),
  fc.record({ op: fc.constant('replace'), path: fc.constantFrom('emails[type eq "work"].value', 'emails[type eq "home"].display'), value: fc.constantFrom('a@acme.example', 'b@acme.example') }),
  fc.record({ op: fc.constant('remove'), path: fc.constantFrom('emails[type eq "home"]', 'emails[value co "acme"]') }),
  fc.record({ op: fc.constant('replace'), value: fc.record({ displayName: text, title: text }, { requiredKeys: ['displayName'] }) }),
);
const patchedUser = fc.record({
  displayName: fc.option(text, { nil: undefined }), title: fc.option(text, { nil: undefined }),
  name: fc.option(fc.record({ givenName: text, familyName: text }), { nil: undefined }),
  emails: fc.constant([{ value: 'w@acme.example', type: 'work' }, { value: 'h@home.example', type: 'home' }]),
}).map((r) => ({ userName: 'ada', ...JSON.parse(JSON.stringify(r)) as Record<string, unknown> }));

it('applies add, replace and remove as SCIMMY does', async () => {
  await fc.assert(fc.asyncProperty(patchedUser, fc.array(operation, { minLength: 1, maxLength: 4 }), async (user, operations) => {
    const body = { schemas: [SCHEMA.patchOp], Operations: operations };
    const ours = readResource(applyPatch(user, body, 'user'), 'user').data;
    let theirs: unknown;
    const before = new SCIMMY.Schemas.User({ schemas: [SCHEMA.user], id: 'x', ...user }, 'out');
    try {
      // (SCIMMY answers nothing when the operations changed nothing)
      theirs = await new SCIMMY.Messages.PatchOp(body as ConstructorParameters<typeof SCIMMY.Messages.PatchOp>[0]).apply(before) ?? before;
    } catch (e) {
      // the one deliberate difference: a value filter that matches nothing, in an add or replace of
      // its sub-attribute, makes that value from the filter's equalities (as Entra ID expects), where
      // SCIMMY refuses with noTarget
      fc.pre(!/does not match any values/.test((e as Error).message));
      throw e;
    }
    const { schemas: _s, id: _i, meta: _m, ...rest } = JSON.parse(JSON.stringify(theirs)) as Record<string, unknown>;
    // SCIMMY keeps an emptied complex attribute as {}; a resource without it says the same
    const cleaned = Object.fromEntries(Object.entries(rest).filter(([, v]) => !(v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0)));
    expect(ours).toEqual(cleaned);
  }), { numRuns: 300 });
});

it('refuses what is not a PatchOp, with the RFC\'s scimType', () => {
  const refusal = (body: unknown) => {
    try {
      applyPatch({ userName: 'ada' }, body, 'user');
      return undefined;
    } catch (e) {
      return (e as ScimPatchError).scimType;
    }
  };
  expect(refusal({ Operations: [{ op: 'add', path: 'title', value: 'x' }] })).toBe('invalidSyntax');
  expect(refusal({ schemas: [SCHEMA.patchOp], Operations: 'x' })).toBe('invalidSyntax');
  expect(refusal({ schemas: [SCHEMA.patchOp], Operations: [{ op: 'replace', path: 'emails[type eq "work"]', value: 'x' }] })).toBe('invalidValue');
  expect(refusal({ schemas: [SCHEMA.patchOp], Operations: [{ op: 'replace', path: 'emails[type co "w"].value', value: 'x' }] })).toBe('noTarget');
  expect(refusal({ schemas: [SCHEMA.patchOp], Operations: [{ op: 'replace', path: 'title[type eq "w"]', value: 'x' }] })).toBe('invalidPath');
  expect(refusal({ schemas: [SCHEMA.patchOp], Operations: [{ op: 'replace', path: 'groups', value: [] }] })).toBe('mutability');
  expect(refusal({ schemas: [SCHEMA.patchOp], Operations: [{ op: 'replace', path: 'meta.version', value: 'x' }] })).toBe('invalidPath');
  expect(refusal({ schemas: [SCHEMA.patchOp], Operations: Array.from({ length: 1001 }, () => ({ op: 'remove', path: 'title' })) })).toBe('invalidSyntax');
});
