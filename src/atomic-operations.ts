import type { WriteContext } from "./db/subscriptions";
import type { ErrorObject } from "./jsonapi";
import type { ResourceRef, Validated } from "./resources/resource-object";

/**
 * What a resource type supplies to `POST /v1/operations` (docs/API.md §6, 10, 13): how its operations are
 * validated and how they are written. The bulk route does everything the types share (the request frame,
 * `op`, `data` and `ref`, dispatch by type, one batch, the results document); adding a resource type to bulk
 * is one more entry in its list.
 */
export type OperationName = "add" | "update" | "remove";

/** An element of `atomic:results`. */
export type AtomicResult = { data: unknown } | Record<string, never> | { errors: ErrorObject[] };

export interface OperationKind<V> {
  /** The resource type its operations name in `data.type` and `ref.type`. */
  type: string;
  /**
   * Validates one operation of this type with the validators its own endpoints use: `add` as POST, `update`
   * as PATCH (`data` at `pointer/data`), `remove` by its already checked `ref` as DELETE by its path.
   */
  parse(op: OperationName, operation: Record<string, unknown>, pointer: string, ref?: ResourceRef): Validated<V>;
  /** The id an `update` names, which its optional `ref` must name too. */
  idOf(value: V): string;
  /**
   * The writer of one request: plans each valid operation into the shared batch, in request order, and
   * returns the reader of its result element (`pointer`: the operation's, for inline errors).
   */
  writer(context: WriteContext): (value: V, pointer: string) => () => AtomicResult;
}
