/** Absolute path of the loadable library inside this package. */
export function getLoadablePath(): string;
/** Loads cmp into a better-sqlite3 Database (or a node:sqlite DatabaseSync opened with allowExtension). */
export function load(db: { loadExtension(path: string): unknown }): void;
