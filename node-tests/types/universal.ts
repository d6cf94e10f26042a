// Bundler consumer without platform conditions: the universal entry's types, which have no
// platform page store.
// @ts-expect-error the file store is exported under the "node" condition only
import { openNodeFsPageStore } from 'pqdb';
// @ts-expect-error the IndexedDB store is exported under the "browser" condition only
import { openIndexedDbPageStore } from 'pqdb';
void [openNodeFsPageStore, openIndexedDbPageStore];
