import { OPERATOR_ROLE_ATTRIBUTE } from './operators';
import type { UserRecord } from './storage/records';
import type { CompiledForm } from './flow-forms';

/** What a submitted form changes on a record, through each field's schemaAttribute. */
export interface RecordChange {
  email?: string;
  username?: string;
  /** In clear, to be hashed; never stored as is. */
  password?: string;
  attributes: Record<string, unknown>;
}

/** Maps validated form values onto record attributes; fields without a schemaAttribute are dropped. */
export function changesFrom(form: CompiledForm, values: Record<string, string>): RecordChange {
  const change: RecordChange = { attributes: {} };
  for (const { name, field } of form.fields) {
    const attribute = field.schemaAttribute;
    const value = values[name];
    if (!attribute || value === undefined) continue;
    if (attribute === 'email' || attribute === 'username' || attribute === 'password') change[attribute] = value;
    // (an operator's role is never a form's: docs/console.md#operators)
    else if (attribute !== 'emailVerified' && attribute !== 'uuid' && attribute !== 'id' && attribute !== OPERATOR_ROLE_ATTRIBUTE) change.attributes[attribute] = value === '' ? null : value;
  }
  return change;
}

/** The record's stored values under the form's field names: what an edit need not resend. */
export function prefillFrom(form: CompiledForm, record: UserRecord): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { name, field } of form.fields) {
    const attribute = field.schemaAttribute;
    if (!attribute || attribute === 'password') continue;
    const value = attribute === 'email' ? record.email : attribute === 'username' ? record.username : record.attributes[attribute];
    if (typeof value === 'string' && value !== '') out[name] = value;
  }
  return out;
}
