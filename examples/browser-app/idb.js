// The app's small key database (pqdb-notes-keys, object store `keys`), shared by the page (its
// device key, the store's current location) and the database worker (the wrapped keyring).
const NAME = 'pqdb-notes-keys';

/** Runs one request on the key database and resolves with its result once its transaction is done. */
export function idb(mode, use) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(NAME, 1);
    open.onupgradeneeded = () => open.result.createObjectStore('keys');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const tx = db.transaction('keys', mode);
      const req = use(tx.objectStore('keys'));
      let result;
      req.onsuccess = () => (result = req.result);
      tx.oncomplete = () => {
        db.close();
        resolve(result);
      };
      tx.onerror = tx.onabort = () => {
        db.close();
        reject(tx.error ?? req.error);
      };
    };
  });
}
