import type { Filter } from './filter';
import type { UserRecord } from './storage/records';

/**
 * The operators' console (docs/console.md): operators are accounts of an application of their own
 * (CONSOLE_APP, `operators` by default), and what each may do is its role, an attribute of its
 * record that only an operator sets (`gatehouse operators:add`, `operators:role`): no flow's form
 * has it, so nobody gives it to themselves.
 */
export const OPERATOR_ROLE_ATTRIBUTE = 'operatorRole';

/** `viewer` reads; `support` also acts on accounts (the lifecycle); `admin` also changes applications, clients, settings and keys. */
export const OPERATOR_ROLES = ['viewer', 'support', 'admin'] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

/** What a console request does: read, act on an account, or administer an application. */
export type ConsoleAction = 'read' | 'account' | 'administer';

const NEEDS: Record<ConsoleAction, OperatorRole> = { read: 'viewer', account: 'support', administer: 'admin' };

/** The role an operator's record holds, if any (anything else in the attribute is no role). */
export function operatorRoleOf(record: Pick<UserRecord, 'attributes'>): OperatorRole | undefined {
  const role = record.attributes[OPERATOR_ROLE_ATTRIBUTE];
  return OPERATOR_ROLES.find((r) => r === role);
}

/** Whether `role` may do `action` (each role may do what the roles before it may). */
export const roleMay = (role: OperatorRole, action: ConsoleAction): boolean => OPERATOR_ROLES.indexOf(role) >= OPERATOR_ROLES.indexOf(NEEDS[action]);

/** The operator's name in the events it causes: its email address, else its username, else its uuid. */
export const operatorName = (record: Pick<UserRecord, 'email' | 'username' | 'uuid'>): string => record.email ?? record.username ?? record.uuid;

/** An operator asked for what its role does not allow: the console answers 403 and does nothing. */
export class OperatorForbiddenError extends Error {
  constructor(readonly role: OperatorRole, readonly action: ConsoleAction) {
    super(`the role ${role} may not ${action === 'account' ? 'act on accounts (support or admin may)' : 'administer applications (admin may)'}`);
  }
}

/** The attributes a name prefix is looked for in, besides the email address and the username. */
const NAME_ATTRIBUTES = ['givenName', 'familyName', 'displayName'];

/** The first string after every string that starts with `prefix` (`ada` → `adb`): a range's end. */
function after(prefix: string): string {
  const last = prefix.codePointAt(prefix.length - 1)!;
  const head = prefix.slice(0, prefix.length - (last > 0xffff ? 2 : 1));
  return head + String.fromCodePoint(last + 1);
}

const range = (attribute: string, prefix: string): Filter => ({
  kind: 'and',
  left: { kind: 'compare', op: '>=', attribute, value: prefix },
  right: { kind: 'compare', op: '<', attribute, value: after(prefix) },
});

/**
 * The console's search of a typed text: an email address (or its beginning, with an `@`) by the
 * email's range; any other text by the beginning of the email, the username or a name (givenName,
 * familyName, displayName). Each as typed and in lower case (a name capitalized too): values are
 * compared as stored, which SQLite does with case.
 */
export function prefixFilter(text: string): Filter {
  const typed = text.trim();
  const lower = typed.toLowerCase();
  // names are compared as stored (SQLite compares exactly): as typed, in lower case, and capitalized
  const ranges = typed.includes('@') ? [...new Set([typed, lower])].map((p) => range('email', p))
    : ['email', 'username', ...NAME_ATTRIBUTES].flatMap((a) => [...new Set([typed, lower, lower.charAt(0).toUpperCase() + lower.slice(1)])].map((p) => range(a, p)));
  return ranges.reduce((left, right) => ({ kind: 'or', left, right }));
}

/** Whether a search text is written in the filter language (a comparison or a null test) rather than a prefix. */
export const isFilterText = (text: string): boolean => /[=<>]|\bis\s+(not\s+)?null\b/i.test(text);
