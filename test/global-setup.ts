import { randomBytes } from 'node:crypto';

/** Names this run, so that its test databases can be found and dropped at its end (global-teardown.ts). */
export default function globalSetup(): void {
  process.env.GATEHOUSE_TEST_RUN = randomBytes(3).toString('hex');
}
