/** @type {import('jest').Config} */
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testTimeout: 60_000,
  // one file at a time: integration files share the database server and Redis
  maxWorkers: 1,
  // in a worker process (not in band), replaced once it holds more than this after a file: each file's
  // module registry and transforms are not all given back, and the whole suite in one process passed
  // the default heap limit
  workerIdleMemoryLimit: '1536MB',
  // names the run; at its end, drops every test database it made on MariaDB/MySQL
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
};
