import { call, type Database } from "./database";

/**
 * One D1 batch (one round trip, one transaction) built by several writers: each operation of a request
 * appends its statements in request order, and reads its own results once the batch has run. Writers of
 * different resources share a batch, so a bulk request that mixes them is still one round trip.
 */

export type Row = Record<string, unknown>;

/** The results of statements appended to a batch, readable once it has run. */
export interface Slot {
  results(): D1Result<Row>[];
}

export class WriteBatch {
  private readonly statements: (D1PreparedStatement | (() => D1PreparedStatement))[] = [];
  private readonly closers: { make: () => D1PreparedStatement[]; slot: { start: number; count: number } }[] = [];
  private ran: D1Result<Row>[] | undefined;

  /** The statements placed so far (a writer tells from it whether another writer placed any since its last). */
  get length(): number {
    return this.statements.length;
  }

  /** Appends statements in order; the slot reads their results after `run`. */
  push(...statements: D1PreparedStatement[]): Slot {
    const start = this.statements.length;
    this.statements.push(...statements);
    return { results: () => this.read(start, statements.length) };
  }

  /**
   * A statement placed here in the order but built only when the batch runs: a read the operations planned
   * after it add to (one read of the rows a bulk request's operations write, before any of them).
   */
  later(make: () => D1PreparedStatement): Slot {
    const start = this.statements.length;
    this.statements.push(make);
    return { results: () => this.read(start, 1) };
  }

  /**
   * Statements appended after every operation's, built only when the batch runs (a check over everything
   * the operations did, such as which adds the quota refused). `make` may return none.
   */
  close(make: () => D1PreparedStatement[]): Slot {
    const slot = { start: 0, count: 0 };
    this.closers.push({ make, slot });
    return { results: () => this.read(slot.start, slot.count) };
  }

  /** Runs every statement in one D1 call. */
  async run(db: Database): Promise<void> {
    for (const { make, slot } of this.closers) {
      const statements = make();
      slot.start = this.statements.length;
      slot.count = statements.length;
      this.statements.push(...statements);
    }
    if (this.statements.length === 0) {
      this.ran = [];
      return;
    }
    const statements = this.statements.map((item) => (typeof item === "function" ? item() : item));
    this.ran = await call(() => db.batch<Row>(statements));
  }

  /** Every statement's results, once the batch has run. */
  all(): D1Result<Row>[] {
    return this.read(0, this.ran?.length ?? 0);
  }

  private read(start: number, count: number): D1Result<Row>[] {
    if (!this.ran) throw new Error("The batch has not run yet.");
    return this.ran.slice(start, start + count);
  }
}
