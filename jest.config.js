/** @type {import('jest').Config} */
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testTimeout: 60_000,
  // one file at a time: integration files share the database server and Redis
  maxWorkers: 1,
};
