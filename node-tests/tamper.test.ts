// The storage-attacker cases of node-tests/cases/tamper.ts on the memory medium and on IndexedDB
// (fake-indexeddb); Playwright runs the same cases on Chromium's real IndexedDB
// (browser-tests/tamper.spec.mjs).
import { describe, it } from 'vitest';
import { generateRecipient, generateSigner, verifyStore } from '../src/index';
import { tamperCases, type TamperFixtureFactory } from './cases/tamper';
import { memoryStoreFixture, indexedDbStoreFixture } from './support/store-fixtures';

const FIXTURES: [string, TamperFixtureFactory][] = [
  ['memory', memoryStoreFixture],
  ['indexeddb (fake-indexeddb)', indexedDbStoreFixture],
];

describe.each(FIXTURES)('a storage attacker editing the medium (%s)', (_name, factory) => {
  for (const c of tamperCases(factory, { generateRecipient, generateSigner, verifyStore })) it(c.name, c.run);
});
