/**
 * The part of JSON Schema the OpenAPI document's answers use: type (one or a list), const,
 * properties, required, additionalProperties (false or a schema), items, oneOf, and $ref into the
 * document's components. Answers the places where `value` does not fit, empty when it does.
 */
export function schemaProblems(schema: Record<string, unknown>, value: unknown, document: Record<string, unknown>, at = '$'): string[] {
  if (typeof schema.$ref === 'string') {
    const target = schema.$ref.replace(/^#\//, '').split('/').reduce<unknown>((node, key) => (node as Record<string, unknown>)?.[key], document);
    if (!target) return [`${at}: $ref ${schema.$ref} names nothing`];
    return schemaProblems(target as Record<string, unknown>, value, document, at);
  }
  if (Array.isArray(schema.oneOf)) {
    const fits = schema.oneOf.filter((s) => schemaProblems(s as Record<string, unknown>, value, document, at).length === 0).length;
    return fits === 1 ? [] : [`${at}: fits ${fits} of the ${schema.oneOf.length} schemas of oneOf, not exactly one`];
  }
  if ('const' in schema && value !== schema.const) return [`${at}: is ${JSON.stringify(value)}, not ${JSON.stringify(schema.const)}`];
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const actual = value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value;
    if (!types.includes(actual) && !(actual === 'integer' && types.includes('number'))) return [`${at}: is ${actual}, not ${types.join(' or ')}`];
  }
  const problems: string[] = [];
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) => problems.push(...schemaProblems(schema.items as Record<string, unknown>, item, document, `${at}[${i}]`)));
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
    for (const name of (schema.required ?? []) as string[]) if (!(name in object)) problems.push(`${at}: lacks ${name}`);
    for (const [name, member] of Object.entries(object)) {
      if (properties[name]) problems.push(...schemaProblems(properties[name], member, document, `${at}.${name}`));
      else if (schema.additionalProperties === false) problems.push(`${at}: has ${name}, which the document does not list`);
      else if (typeof schema.additionalProperties === 'object') {
        problems.push(...schemaProblems(schema.additionalProperties as Record<string, unknown>, member, document, `${at}.${name}`));
      }
    }
  }
  return problems;
}
