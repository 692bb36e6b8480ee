/** @type {import('jest').Config} */
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testTimeout: 60_000,
  // two files at a time: each makes its own database, Redis prefix, folders and ports (the outage tests
  // start servers of their own), so files side by side share nothing but the servers; two keep both
  // cores of the CI machine busy while one waits on a browser, a process or the network
  maxWorkers: 2,
  // in a worker process (not in band), replaced once it holds more than this after a file: each file's
  // module registry and transforms are not all given back, and the whole suite in one process passed
  // the default heap limit
  workerIdleMemoryLimit: '1536MB',
  // names the run; at its end, drops every test database it made on MariaDB/MySQL
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
};
