import { ANSWERS, ENDPOINT_DOCS, openApiDocument } from '../../src/http/openapi';
import { ROUTES } from '../../src/http/routes';
import { schemaProblems } from '../helpers/json-schema';

// Each endpoint's documented answer (test/e2e/readme.test.ts checks real answers against them)

const document = openApiDocument(ROUTES, 'test');
const answerOf = (path: string) => (document.paths as Record<string, any>)[path].post.responses[200].content['application/json'].schema;

it('every endpoint of the route table documents its own answer, not a generic ok', () => {
  expect(ROUTES.map((r) => r.path).filter((p) => !ANSWERS[p] || !ENDPOINT_DOCS[p])).toEqual([]);
  for (const route of ROUTES) expect(answerOf(route.path).oneOf[0]).toBe(ANSWERS[route.path]);
});

it('an answer fits its schema; a member missing, one too many or of another type does not; an error body fits the other branch', () => {
  const schema = answerOf('/clients/reset_secret');
  expect(schemaProblems(schema, { stat: 'ok', new_secret: 's' }, document)).toEqual([]);
  expect(schemaProblems(schema, { stat: 'ok' }, document)).not.toEqual([]);
  expect(schemaProblems(schema, { stat: 'ok', new_secret: 's', secret: 's' }, document)).not.toEqual([]);
  expect(schemaProblems(schema, { stat: 'ok', new_secret: 3 }, document)).not.toEqual([]);
  expect(schemaProblems(schema, { stat: 'error', code: 100, error: 'missing_argument', error_description: 'x', request_id: 'r' }, document)).toEqual([]);
  // a record through its $ref: the service's members typed, the application's own free
  const created = answerOf('/entity.update');
  const record = { id: 1, uuid: 'u', created: 't', lastUpdated: 't', email: null, profiles: [], favouriteColour: 'green' };
  expect(schemaProblems(created, { stat: 'ok', result: record }, document)).toEqual([]);
  expect(schemaProblems(created, { stat: 'ok', result: { ...record, id: '1' } }, document)).not.toEqual([]);
  expect(schemaProblems(answerOf('/oauth/token'), { stat: 'ok', access_token: 'a', expires_in: 3600 }, document)).not.toEqual([]);
});
