/**
 * Every db function makes exactly one D1 call (one statement or one batch), so every request costs one
 * round trip to the database. A batch is one transaction: its statements are written so that none can fail
 * on a conflict, and each returns its own result.
 */
export type Database = D1Database | D1DatabaseSession;

/** A request's database: a D1 database or one of its sessions (same prepare/batch surface). */
export function database(d1: D1Database | D1DatabaseSession): Database {
  return d1;
}

/** A D1 call failed (unavailable, overloaded, reset): the client may retry; a batch is all-or-nothing. */
export class DatabaseError extends Error {
  constructor(cause: unknown) {
    super("database call failed", { cause });
    this.name = "DatabaseError";
  }
}

/** Runs one D1 call; any failure of D1 itself becomes a DatabaseError (503, safe to retry). */
export async function call<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw new DatabaseError(err);
  }
}
